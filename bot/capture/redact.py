"""Redaction of captured Kubernetes objects: what may leave the cluster in a capture file.

A capture is sent to strangers (a bug report), so this module decides, object by object, what is
kept. It is pure (dicts in, new dicts out, a ``Redactions`` tally beside them) so every rule is
unit-tested without a cluster. What it does, in the order ``docs/capture.md`` lists it:

- ``metadata.managedFields`` dropped; annotations that embed a whole object (kubectl's
  last-applied-configuration and any JSON value holding ``apiVersion`` and ``kind``) dropped;
- every env ``value`` replaced with ``<redacted>``, except the GPU device-selection variables the
  diagnosis reads (``NVIDIA_VISIBLE_DEVICES`` …) when their value is a plain device list;
  ``valueFrom`` and ``envFrom`` references (names and keys, never values) kept;
- command and args words that carry a secret (``--password=…``, ``token=…``, ``Bearer …``, Slack,
  GitHub and AWS key shapes, long base64 or hex strings) redacted, the flag name kept;
- label and annotation values that look like a secret redacted;
- any string anywhere that has one of the unmistakable token shapes (``xoxb-…``, ``AKIA…``)
  redacted, as a net under the rules above (event messages, container status messages);
- ConfigMaps and Secrets are never passed here: capture does not read them.

It must never drop or rewrite what the diagnosis reads (names, labels, requests, taints,
statuses, events), and never echo a redacted value anywhere, the tally included.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REDACTED = "<redacted>"

#: annotations that hold a copy of the whole object (and so of every env value in it)
SPEC_ANNOTATIONS = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        "deployment.kubernetes.io/desired-spec",
        "control-plane.alpha.kubernetes.io/leader",
    }
)
#: env variables whose value the diagnosis reads (which cards a container asked for); kept when
#: the value is a device list, never a secret
GPU_ENV = frozenset(
    {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_MIG_CONFIG_DEVICES"}
)
_DEVICE_LIST = re.compile(r"^[A-Za-z0-9,:._ -]{0,400}$")

#: token shapes that are a credential wherever they appear (checked in every string)
_TOKEN_SHAPES = re.compile(
    r"(?:xox[abposr]-[A-Za-z0-9-]{8,}"  # Slack bot/user/app tokens
    r"|xapp-[A-Za-z0-9-]{8,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{16,}"  # GitLab
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI-style API keys
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,})"  # JWTs
)
#: ``Bearer X`` / ``Basic X`` anywhere in a string
_AUTH_SCHEME = re.compile(r"\b(Bearer|Basic|Token)\s+[^\s'\"]+", re.IGNORECASE)
#: a key or flag name that says its value is a secret
_SECRET_NAME = re.compile(
    r"(pass(word|wd)?|secret|token|api[-_]?key|access[-_]?key|private[-_]?key|credential|auth|"
    r"session|cookie|signing|webhook[-_]?url|dsn)",
    re.IGNORECASE,
)
#: ``name=value`` or ``name: value`` with a secret-sounding name
_NAMED_VALUE = re.compile(r"(?P<name>[A-Za-z0-9_.-]*)(?P<sep>=|:\s*)(?P<value>\S+)")
_HEX = re.compile(r"^[0-9a-fA-F]{32,}$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]{32,}={0,2}$")


def looks_secret(value: str) -> bool:
    """A whole value that reads as a credential: a known token shape, or a long hex/base64 blob."""
    text = value.strip()
    if _TOKEN_SHAPES.search(text) or _AUTH_SCHEME.search(text):
        return True
    if _HEX.match(text):
        return True
    # a long unbroken base64 word with letters and digits, not a path
    return (
        bool(_BASE64.match(text))
        and not text.startswith("/")
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
    )


def scrub_text(text: str) -> tuple[str, int]:
    """``text`` with every unmistakable token shape and ``Bearer X`` replaced; and how many."""
    out, n1 = _TOKEN_SHAPES.subn(REDACTED, text)
    out, n2 = _AUTH_SCHEME.subn(lambda m: f"{m.group(1)} {REDACTED}", out)
    return out, n1 + n2


@dataclass
class Redactions:
    """How many things each rule removed; printed after a capture (counts only, never values)."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, what: str, n: int = 1) -> None:
        if n:
            self.counts[what] += n

    def summary(self) -> str:
        if not self.counts:
            return "nothing needed redacting"
        return ", ".join(f"{n} {what}" for what, n in sorted(self.counts.items()))


def _redact_word(word: str, tally: Redactions) -> str:
    """One command/args word: ``--flag=SECRET`` keeps the flag; a secret-looking word goes whole."""
    match = _NAMED_VALUE.fullmatch(word.strip())
    if match and _SECRET_NAME.search(match.group("name")):
        tally.add("secret command-line values")
        return f"{match.group('name')}{match.group('sep')}{REDACTED}"
    if match and looks_secret(match.group("value")):
        tally.add("secret command-line values")
        return f"{match.group('name')}{match.group('sep')}{REDACTED}"
    if looks_secret(word) and " " not in word.strip():
        tally.add("secret command-line values")
        return REDACTED
    scrubbed, n = scrub_text(word)
    if n:
        tally.add("secret command-line values", n)
    return scrubbed


def redact_words(words: list[Any], tally: Redactions) -> list[str]:
    """A command or args list: secret words redacted, and the word after a secret flag
    (``--password X``, ``-H 'Authorization: …'`` is caught by the Bearer rule)."""
    out: list[str] = []
    after_flag = False
    for raw in words:
        word = str(raw)
        if after_flag and not word.startswith("-"):
            tally.add("secret command-line values")
            out.append(REDACTED)
            after_flag = False
            continue
        after_flag = word.startswith("-") and "=" not in word and bool(_SECRET_NAME.search(word))
        out.append(_redact_word(word, tally))
    return out


def _redact_env(env: list[Any], tally: Redactions) -> list[Any]:
    out = []
    for item in env:
        if not isinstance(item, dict) or "value" not in item:
            out.append(item)  # valueFrom: a reference (Secret/ConfigMap name and key), no value
            continue
        value = str(item.get("value") if item.get("value") is not None else "")
        keep = item.get("name") in GPU_ENV and _DEVICE_LIST.match(value) and not looks_secret(value)
        if not keep:
            tally.add("env values")
            item = {**item, "value": REDACTED}
        out.append(item)
    return out


def _redact_container(container: Any, tally: Redactions) -> Any:
    if not isinstance(container, dict):
        return container
    out = dict(container)
    if isinstance(out.get("env"), list):
        out["env"] = _redact_env(out["env"], tally)
    for key in ("command", "args"):
        if isinstance(out.get(key), list):
            out[key] = redact_words(out[key], tally)
    lifecycle = out.get("lifecycle")
    if lifecycle:
        out["lifecycle"] = _walk_commands(lifecycle, tally)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(out.get(probe), dict):
            out[probe] = _walk_commands(out[probe], tally)
    return out


def _walk_commands(obj: Any, tally: Redactions) -> Any:
    """exec ``command`` lists inside probes and lifecycle hooks; HTTP header values."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if key == "command" and isinstance(value, list):
                out[key] = redact_words(value, tally)
            elif key == "httpHeaders" and isinstance(value, list):
                out[key] = [{**h, "value": REDACTED} if isinstance(h, dict) and "value" in h else h for h in value]
                tally.add("probe header values", sum(1 for h in value if isinstance(h, dict) and "value" in h))
            else:
                out[key] = _walk_commands(value, tally)
        return out
    if isinstance(obj, list):
        return [_walk_commands(v, tally) for v in obj]
    return obj


def _redact_pod_spec(spec: Any, tally: Redactions) -> Any:
    if not isinstance(spec, dict):
        return spec
    out = dict(spec)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        if isinstance(out.get(key), list):
            out[key] = [_redact_container(c, tally) for c in out[key]]
    # imagePullSecrets: names only, as the API holds them; nothing to remove
    return out


def _embeds_object(value: str) -> bool:
    text = value.strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, dict) and "apiVersion" in parsed and "kind" in parsed


def _redact_map(values: Any, what: str, tally: Redactions, *, annotations: bool) -> Any:
    if not isinstance(values, dict):
        return values
    out: dict[str, Any] = {}
    for key, value in values.items():
        text = str(value)
        if annotations and (key in SPEC_ANNOTATIONS or _embeds_object(text)):
            tally.add("annotations that embed a whole object (dropped)")
            continue
        if _SECRET_NAME.search(str(key).rsplit("/", 1)[-1]) and annotations and text and not _is_plain_flag(text):
            tally.add(f"{what} values with a secret-sounding name")
            out[key] = REDACTED
        elif looks_secret(text):
            tally.add(f"{what} values that look like a secret")
            out[key] = REDACTED
        else:
            out[key] = value
    return out


def _is_plain_flag(text: str) -> bool:
    """Values such as ``true``, ``ignore``, ``enabled``, numbers: not a secret whatever the key says."""
    return text.strip().lower() in {"true", "false", "ignore", "enabled", "disabled", "yes", "no"} or (
        text.strip().isdigit()
    )


def _redact_metadata(meta: Any, tally: Redactions) -> Any:
    if not isinstance(meta, dict):
        return meta
    out = dict(meta)
    if "managedFields" in out:
        del out["managedFields"]
        tally.add("managedFields blocks (dropped)")
    if "annotations" in out:
        out["annotations"] = _redact_map(out["annotations"], "annotation", tally, annotations=True)
    if "labels" in out:
        out["labels"] = _redact_map(out["labels"], "label", tally, annotations=False)
    return out


def _scrub_all(obj: Any, tally: Redactions) -> Any:
    """The net: every string of the object with token shapes replaced."""
    if isinstance(obj, dict):
        return {k: _scrub_all(v, tally) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_scrub_all(v, tally) for v in obj]
    if isinstance(obj, str):
        text, n = scrub_text(obj)
        tally.add("token-shaped strings elsewhere", n)
        return text
    return obj


#: where a kind keeps its pod spec
_POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
}


def _at(obj: dict[str, Any], path: tuple[str, ...], fn: Callable[[Any], Any]) -> dict[str, Any]:
    """A copy of ``obj`` with the value at ``path`` replaced by ``fn(value)`` (copying the way down)."""
    if not path or not isinstance(obj, dict) or path[0] not in obj:
        return obj
    head, rest = path[0], path[1:]
    return {**obj, head: fn(obj[head]) if not rest else _at(obj[head], rest, fn)}


def _without_images(status: Any) -> Any:
    """A Node's status without ``images`` (large, and nothing the diagnosis reads)."""
    return {k: v for k, v in status.items() if k != "images"} if isinstance(status, dict) else status


def redact_object(obj: dict[str, Any], tally: Redactions) -> dict[str, Any]:
    """One API object as it may appear in a capture file (a new dict; ``obj`` is not changed)."""
    kind = str(obj.get("kind", ""))
    out = dict(obj)
    out["metadata"] = _redact_metadata(obj.get("metadata"), tally)
    template_meta = ("spec", "template", "metadata")
    out = _at(out, template_meta, lambda m: _redact_metadata(m, tally))
    path = _POD_SPEC_PATHS.get(kind)
    if path is not None:
        out = _at(out, path, lambda s: _redact_pod_spec(s, tally))
    if kind == "Node":
        out = _at(out, ("status",), _without_images)
    return dict(_scrub_all(out, tally))


def redact_objects(objects: list[dict[str, Any]], tally: Redactions) -> list[dict[str, Any]]:
    return [redact_object(o, tally) for o in objects]


def scrub_document(value: Any, tally: Redactions) -> Any:
    """Any structure (node sections, notes) with the unmistakable token shapes replaced."""
    return _scrub_all(value, tally)
