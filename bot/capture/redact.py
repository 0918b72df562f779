"""Redaction of captured Kubernetes objects: what may leave the cluster in a capture file.

A capture is sent to strangers (a bug report), so this module decides, object by object, what is
kept. It is pure (dicts in, new dicts out, a ``Redactions`` tally beside them) so every rule is
unit-tested without a cluster. What it does, in the order ``docs/capture.md`` lists it:

- ``metadata.managedFields`` dropped; annotations that embed a whole object (kubectl's
  last-applied-configuration and any JSON value holding ``apiVersion`` and ``kind``) dropped;
- every env ``value`` replaced with ``<redacted>``, except the GPU device-selection variables the
  diagnosis reads (``NVIDIA_VISIBLE_DEVICES`` …) when their value is a plain device list;
  ``valueFrom`` and ``envFrom`` references (names and keys, never values) kept;
- command and args words that carry a secret (``--password=…``, ``--token X``, ``-p X`` unless a
  port or a path, ``-u user:X``, ``Bearer …``, token shapes, long base64 or hex strings)
  redacted, the flag name kept; a word holding a shell string is read as text
  (``bot.capture.secret_text``: ``export X=…``, URL credentials, private keys);
- label and annotation values under a secret-sounding key (``bot.capture.secret_names``) or that
  look like a secret redacted; JSON/YAML annotation values parsed, redacted by key, written back;
- any string anywhere scrubbed by the text rules (private keys, URL credentials, token shapes,
  ``NAME=VALUE`` with a secret name), as a net under the rules above;
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

from bot.capture.secret_names import secret_name
from bot.capture.secret_text import (
    REDACTED,
    TOKEN_SHAPES,
    keeps_after_p,
    scrub_command_text,
    scrub_text,
)
from bot.yamlio.dump import dump_yaml
from bot.yamlio.marks import YamlSyntaxError, load_yaml

__all__ = ["REDACTED", "Redactions", "looks_secret", "redact_object", "redact_objects", "redact_words", "scrub_text"]

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

_HEX = re.compile(r"^[0-9a-fA-F]{32,}$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]{32,}={0,2}$")
_AUTH_WORD = re.compile(r"^(Bearer|Basic|Token)\s+\S", re.IGNORECASE)
#: values that are a setting whatever the key says (``auth: enabled``), never a secret
_PLAIN_SETTINGS = frozenset({"true", "false", "ignore", "enabled", "disabled", "yes", "no", "none", "", REDACTED})
#: the largest annotation value parsed as an embedded JSON/YAML document (the API caps all of an
#: object's annotations together at 256 KiB)
MAX_EMBEDDED = 256 * 1024


#: a UUID, bare or as nvidia-smi names cards and MIG instances (``GPU-…``, ``MIG-GPU-…/1/0``):
#: an identifier the diagnosis matches on (HAMi's register annotation, device lists), not a secret
_UUID = re.compile(r"^(?:MIG-)?(?:GPU-)?[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?:/\d+)*$")


def looks_secret(value: str) -> bool:
    """A whole value that reads as a credential: a known token shape, or a long hex/base64 blob
    (not a UUID)."""
    text = value.strip()
    if TOKEN_SHAPES.search(text) or _AUTH_WORD.search(text):
        return True
    if _UUID.match(text):
        return False
    if _HEX.match(text):
        return True
    # a long unbroken base64 word with letters and digits, not a path
    return (
        bool(_BASE64.match(text))
        and not text.startswith("/")
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
    )


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


_FLAG_EQ = re.compile(r"^(?P<name>-{1,2}[A-Za-z][\w.-]*|[A-Za-z_][\w.-]*)(?P<sep>=)(?P<value>.*)$")


def _redact_word(word: str, tally: Redactions) -> str:
    """One command/args word: ``--flag=SECRET`` keeps the flag; a shell string is read as one;
    a secret-looking word goes whole."""
    if any(c.isspace() for c in word.strip()):  # a shell string or a header: read as text
        scrubbed, n = scrub_command_text(word)
        tally.add("secret command-line values", n)
        return scrubbed
    match = _FLAG_EQ.match(word)
    if match and (secret_name(match.group("name")) or looks_secret(match.group("value"))):
        if match.group("value").startswith(REDACTED):
            return word
        tally.add("secret command-line values")
        return f"{match.group('name')}{match.group('sep')}{REDACTED}"
    if word.startswith("-p") and len(word) > 2 and not word.startswith("-p=") and not keeps_after_p(
        word[2:], attached=True
    ):
        tally.add("secret command-line values")
        return f"-p{REDACTED}"
    if looks_secret(word):
        tally.add("secret command-line values")
        return REDACTED
    scrubbed, n = scrub_command_text(word)
    tally.add("secret command-line values", n)
    return scrubbed


def _secret_flag(word: str) -> bool:
    """A word whose next word is its value, and a secret one: ``--password``, ``--api-key``."""
    return word.startswith("-") and "=" not in word and secret_name(word)


def _redact_value_word(flag: str, word: str, tally: Redactions) -> str | None:
    """The word after ``flag`` when the flag makes it a secret; None when it is not one."""
    if word.startswith("-") or word.startswith(REDACTED):
        return None
    if _secret_flag(flag) or (flag == "-p" and not keeps_after_p(word, attached=False)):
        tally.add("secret command-line values")
        return REDACTED
    if flag in ("-u", "--user") and ":" in word:
        tally.add("secret command-line values")
        return f"{word.split(':', 1)[0]}:{REDACTED}"
    return None


def redact_words(words: list[Any], tally: Redactions) -> list[str]:
    """A command or args list: secret words redacted, and the word after a secret flag
    (``--password X``, ``-p X`` unless X is a port or a path, ``-u user:X``); a word holding a
    shell string (``sh -c "export TOKEN=…"``) is read as text."""
    out: list[str] = []
    previous = ""
    for raw in words:
        word = str(raw)
        value = _redact_value_word(previous, word, tally) if previous else None
        out.append(value if value is not None else _redact_word(word, tally))
        previous = word
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


def _parse_embedded(text: str) -> Any:
    """An annotation value that is a JSON or (multi-line) YAML document, parsed; None when not."""
    stripped = text.strip()
    if len(stripped) > MAX_EMBEDDED:
        return None
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):
            return None
    if "\n" in stripped and ":" in stripped:
        try:
            return load_yaml(stripped)
        except YamlSyntaxError:
            return None
    return None


def _embeds_object(parsed: Any) -> bool:
    return isinstance(parsed, dict) and "apiVersion" in parsed and "kind" in parsed


def _redact_tree(value: Any, tally: Redactions, *, secret: bool = False) -> Any:
    """A parsed document redacted by key: a value under a secret-sounding key goes, any string
    that looks like a secret goes, other strings are read as text."""
    if isinstance(value, dict):
        return {k: _redact_tree(v, tally, secret=secret or secret_name(str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_tree(v, tally, secret=secret) for v in value]
    if value is None or isinstance(value, bool):
        return value
    text = str(value)
    if (secret and text.strip().lower() not in _PLAIN_SETTINGS) or looks_secret(text):
        tally.add("embedded document values")
        return REDACTED
    if not isinstance(value, str):
        return value
    scrubbed, n = scrub_command_text(text)
    tally.add("embedded document values", n)
    return scrubbed


def _reserialise(original: str, redacted: Any) -> str:
    if original.strip().startswith(("{", "[")):
        compact = '": ' not in original and '", ' not in original  # written back as it came
        return json.dumps(redacted, ensure_ascii=False, separators=(",", ":") if compact else None)
    return dump_yaml(redacted)


def _redact_value(key: str, text: str, what: str, tally: Redactions, *, annotations: bool) -> str | None:
    """One label or annotation value as it may be written; None when it is dropped."""
    parsed = _parse_embedded(text) if annotations else None
    if annotations and (key in SPEC_ANNOTATIONS or _embeds_object(parsed)):
        tally.add("annotations that embed a whole object (dropped)")
        return None
    if secret_name(key) and text.strip().lower() not in _PLAIN_SETTINGS:
        tally.add(f"{what} values with a secret-sounding name")
        return REDACTED
    if looks_secret(text):
        tally.add(f"{what} values that look like a secret")
        return REDACTED
    if isinstance(parsed, (dict, list)):
        before = sum(tally.counts.values())
        redacted = _redact_tree(parsed, tally)
        return _reserialise(text, redacted) if sum(tally.counts.values()) != before else text
    scrubbed, n = scrub_command_text(text)
    tally.add(f"secrets inside {what} values", n)
    return scrubbed


def _redact_map(values: Any, what: str, tally: Redactions, *, annotations: bool) -> Any:
    if not isinstance(values, dict):
        return values
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            out[key] = value
            continue
        kept = _redact_value(str(key), str(value), what, tally, annotations=annotations)
        if kept is not None:
            out[key] = kept if kept != str(value) else value
    return out


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
