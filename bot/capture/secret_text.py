"""Secrets inside a piece of text, found by shape and by structure, replaced with ``<redacted>``.

Shape alone (``xoxb-…``, ``AKIA…``) misses the commonest leaks, which have no shape at all: a
password in a URL (``postgres://app:hunter2@db``), after a flag (``--password hunter2``,
``-phunter2``), in a shell assignment (``sh -c "export AWS_SECRET_ACCESS_KEY=…"``), or as
``pw=…`` in a note. So the text is read for its structure too; whether a name is secret is
``bot.capture.secret_names``'s one answer.

Two strengths, because a rule that is right for a command line is wrong for a status message:

- ``scrub_text`` (every string of a capture: event messages, statuses, node readings): private
  key blocks, credentials in URLs, token shapes, ``Bearer X``, ``NAME=VALUE`` and
  ``--secret-flag VALUE`` with a secret name. It must not touch what the diagnosis reads.
- ``scrub_command_text`` (shell strings in command/args, annotation values): all of the above,
  plus ``name: value`` with a secret name (``Authorization: …``, ``"password": "…"``), ``-p VALUE``
  (see ``keeps_after_p``) and ``-u user:PASSWORD``. In an event message ``token: the server…``
  is prose, so these stay out of ``scrub_text``.

A value already ``<redacted>`` is left as it is (the rules run in sequence over one string).
"""

from __future__ import annotations

import re

from bot.capture.secret_names import secret_name

REDACTED = "<redacted>"

#: a private key block (PEM, OpenSSH, PGP), also one cut off before its END line
_PRIVATE_KEY = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.DOTALL
)
#: ``scheme://user:password@host`` and ``scheme://token@host``
_URL_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s/@:'\"<>]*)(?::(?P<pw>[^\s/'\"<>]*))?@(?=[\w\[])"
)
#: token shapes that are a credential wherever they appear
TOKEN_SHAPES = re.compile(
    r"(?:xox[abposre]-[A-Za-z0-9-]{8,}|xoxe\.xox[a-z]-[A-Za-z0-9-]{8,}"  # Slack bot/user/config tokens
    r"|xapp-[A-Za-z0-9-]{8,}"  # Slack app-level tokens
    r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"  # Slack webhook URLs
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{16,}"  # GitLab
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}"  # AWS key ids
    r"|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[0-9A-Za-z_-]{20,}"  # GCP API key, OAuth
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{50,}|dckr_pat_[A-Za-z0-9_-]{20,}"  # registries
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI/Anthropic-style API keys
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,})"  # JWTs
)
#: ``Bearer X`` / ``Basic X`` / ``Token X`` anywhere in a string
_AUTH_SCHEME = re.compile(r"\b(Bearer|Basic|Token)\s+(?!<redacted>)[^\s'\"]+", re.IGNORECASE)
#: a value: quoted, or a run up to whitespace or a shell separator
_VALUE = r"(?P<value>\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s;&|'\"`]+)"
#: ``NAME=VALUE`` and ``--flag=VALUE`` (also ``export NAME=…``, ``?token=…&``)
_ASSIGNMENT = re.compile(r"(?<![\w.])(?P<name>-{0,2}[A-Za-z_][\w.-]*)(?P<sep>=)" + _VALUE)
#: ``--secret-flag VALUE`` (a value that does not start with ``-``)
_FLAG_VALUE = re.compile(r"(?<![\w.-])(?P<name>--?[A-Za-z][\w.-]*)(?P<sep>[ \t]+)(?!-)" + _VALUE)
#: ``name: value``, the name perhaps quoted (``"password": "x"``, ``Authorization: Basic x``)
_COLON_VALUE = re.compile(
    r"(?P<q>[\"']?)(?<![\w.-])(?P<name>[A-Za-z_][\w.-]*)(?P=q)(?P<sep>[ \t]*:[ \t]*)(?!//)"
    r"(?:(?P<scheme>Bearer|Basic|Token)[ \t]+)?" + _VALUE,
    re.IGNORECASE,
)
#: ``-p VALUE`` and ``-pVALUE`` (a password for mysql and friends; a port for docker and ssh)
_P_FLAG = re.compile(r"(?<![\w.-])-p(?P<sep>[ \t]+|)(?!-)" + _VALUE)
#: ``-u user:PASSWORD`` / ``--user=user:PASSWORD`` (curl and friends)
_USER_FLAG = re.compile(r"(?<![\w.-])(?P<flag>-u|--user)(?P<sep>[ \t]+|=)(?P<user>[^\s:'\"]+):" + _VALUE)
#: what follows ``-p`` and is not a password: a port or port mapping (docker's
#: ``[ip:]host:container[/proto]``, ranges too), a path, a variable reference
_PORTISH = re.compile(r"^(?:[\d.]+:)?\d+(?:-\d+)?(?::\d+(?:-\d+)?)?(?:/(?:tcp|udp|sctp))?$")


def keeps_after_p(value: str, *, attached: bool) -> bool:
    """Whether the word after ``-p`` is kept: a port, a port mapping, a path or ``$VAR``.

    ``-p`` is a port for docker, ssh and kubectl port-forward, a parents flag for mkdir, and a
    password for mysql (``-phunter2``). Anything that is not a port, a path or a variable
    reference is redacted (a ``mkdir -p build`` loses ``build``; leaking a password is worse).
    Attached, ``-pVALUE`` made of lower-case letters only is kept: it is a ``find -print`` or
    ``perl -pe``, not a password.
    """
    text = value.strip("\"'")
    if text.startswith(REDACTED) or _PORTISH.match(text) or text.startswith(("/", "./", "../", "~", "$")):
        return True
    return attached and text.isalpha() and text.islower()


class _Counter:
    """Replacement callbacks that count what they replaced."""

    def __init__(self) -> None:
        self.n = 0

    def whole(self, _match: re.Match[str]) -> str:
        self.n += 1
        return REDACTED

    def url(self, match: re.Match[str]) -> str:
        if match.group("pw") is not None:
            if not match.group("pw") or match.group("pw").startswith(REDACTED):
                return match.group(0)
            self.n += 1
            return f"{match.group('scheme')}{match.group('user')}:{REDACTED}@"
        if not match.group("user") or match.group("user") == REDACTED:
            return match.group(0)
        self.n += 1
        return f"{match.group('scheme')}{REDACTED}@"

    def scheme(self, match: re.Match[str]) -> str:
        self.n += 1
        return f"{match.group(1)} {REDACTED}"

    def named(self, match: re.Match[str]) -> str:
        value = match.group("value")
        if not secret_name(match.group("name")) or value.strip("\"'").startswith(REDACTED):
            return match.group(0)
        self.n += 1
        # everything before the value stays: the name, ``=`` or ``: ``, an auth scheme word
        return match.group(0)[: match.start("value") - match.start(0)] + REDACTED

    def p_flag(self, match: re.Match[str]) -> str:
        if keeps_after_p(match.group("value"), attached=not match.group("sep")):
            return match.group(0)
        self.n += 1
        return f"-p{match.group('sep')}{REDACTED}"

    def user(self, match: re.Match[str]) -> str:
        if match.group("value").startswith(REDACTED):
            return match.group(0)
        self.n += 1
        return f"{match.group('flag')}{match.group('sep')}{match.group('user')}:{REDACTED}"


def _net(text: str, count: _Counter) -> str:
    out = _PRIVATE_KEY.sub(count.whole, text)
    out = _URL_USERINFO.sub(count.url, out)
    out = TOKEN_SHAPES.sub(count.whole, out)
    out = _AUTH_SCHEME.sub(count.scheme, out)
    out = _ASSIGNMENT.sub(count.named, out)
    return _FLAG_VALUE.sub(count.named, out)


def scrub_text(text: str) -> tuple[str, int]:
    """``text`` with key blocks, URL credentials, token shapes, ``Bearer X`` and secret
    ``NAME=VALUE`` / ``--secret-flag VALUE`` replaced; and how many were replaced."""
    count = _Counter()
    return _net(text, count), count.n


def scrub_command_text(text: str) -> tuple[str, int]:
    """``scrub_text`` plus the rules for shell strings and notes: ``name: value``, ``-p X``, ``-u u:X``."""
    count = _Counter()
    out = _COLON_VALUE.sub(count.named, text)
    out = _net(out, count)
    out = _P_FLAG.sub(count.p_flag, out)
    return _USER_FLAG.sub(count.user, out), count.n
