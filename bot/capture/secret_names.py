"""Whether a key, flag or variable name says that its value is a secret.

Redaction by structure (``--password X``, ``DB_PASS=…``, a label ``pw: …``, ``{"apiKey": …}``)
needs one answer to "does this name hold a credential?", shared by every rule so a flag, a shell
variable and an annotation key are judged alike. A name is split into lower-case words (at any
non-alphanumeric character and at camelCase humps): ``AWS_SECRET_ACCESS_KEY`` is
``aws secret access key``, ``apiKey`` is ``api key``, ``--db-pass`` is ``db pass``.

Secret when a word is a credential word (``pw``, ``pass``, ``password``, ``token``, ``secret``,
``auth``, ``dsn``, ``sig``…), or ends in one (``PGPASSWORD``, ``hftoken``), or two neighbouring
words make one (``api key``, ``access key``, ``private key``, ``client secret``, ``webhook url``).
Not secret when the last word says the value is *about* the secret, not the secret itself
(``--token-file /path``, ``secret-name``, ``token-ttl``): reading a path or a reference name
discloses nothing, and keeping it keeps the capture useful. ``--tokenizer`` and ``--max-tokens``
are not secret (whole words are compared, not substrings).
"""

from __future__ import annotations

import re

#: a word that is itself a credential
SECRET_WORDS = frozenset(
    {
        "pw",
        "pwd",
        "pass",
        "passwd",
        "password",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "auth",
        "apikey",
        "credential",
        "credentials",
        "creds",
        "cookie",
        "dsn",
        "signature",
        "sig",
        "jwt",
        "bearer",
        "privkey",
    }
)
#: a single word ending in one of these is a credential (``pgpassword``, ``hftoken``, ``clientsecret``)
SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "credentials", "credential")
#: two neighbouring words that make a credential
SECRET_PAIRS = frozenset(
    {
        "apikey",
        "accesskey",
        "privatekey",
        "secretkey",
        "signingkey",
        "masterkey",
        "encryptionkey",
        "accountkey",
        "sessionkey",
        "licensekey",
        "clientsecret",
        "webhookurl",
        "authkey",
        "connectionstring",
    }
)
#: a last word that names something about the secret rather than the secret itself
ABOUT_WORDS = frozenset(
    {
        "file",
        "path",
        "dir",
        "name",
        "ref",
        "id",
        "ttl",
        "timeout",
        "mode",
        "type",
        "length",
        "size",
        "count",
        "enabled",
        "policy",
        "provider",
        "namespace",
        "version",
        "expiry",
        "expiration",
        "header",
        "interval",
        "rotation",
    }
)
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> list[str]:
    """``name`` as lower-case words: ``--db-Password_x`` -> ``['db', 'password', 'x']``."""
    return [w.lower() for w in _SPLIT.split(name) if w]


def secret_name(name: str) -> bool:
    """True when a value under ``name`` (a key, a flag, a variable) should be treated as a secret.

    For a prefixed key (``example.com/deploy-token``) only the part after the last ``/`` counts.
    """
    words = name_words(name.rsplit("/", 1)[-1])
    if not words or words[-1] in ABOUT_WORDS:
        return False
    if any(w in SECRET_WORDS or w.endswith(SECRET_ENDINGS) for w in words):
        return True
    return any(a + b in SECRET_PAIRS for a, b in zip(words, words[1:], strict=False))
