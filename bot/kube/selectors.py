"""Label and field selectors: the one place gpubot parses and matches them.

Kubernetes writes a label selector two ways: as an object (``metav1.LabelSelector``:
``matchLabels`` and ``matchExpressions``, in pod affinity, topology spread, a workload's
``spec.selector``) and as text (``app=x,tier in (a,b),!legacy``: the ``labelSelector`` query of a
list call, the watch's namespace routes). Both become the same ``LabelRequirement`` tuple here,
matched with the API server's semantics: ``key!=v`` and ``notin`` also match objects without the
key, an object selector of ``None`` matches nothing and ``{}`` everything. Field selectors are
parsed and matched as the API server does for the kinds the simulator serves (an unknown field
label is an error, the API's 400). Callers that must word an error their own way catch
``SelectorError``.

It never performs I/O and imports nothing of gpubot's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import meta_of

_KEY = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class SelectorError(ValueError):
    """A selector the real API would reject with 400 BadRequest."""


@dataclass(frozen=True)
class LabelRequirement:
    """One requirement of a label selector, from either spelling."""

    key: str
    #: ``=``, ``!=``, ``in``, ``notin``, ``exists`` or ``!`` (the key is absent)
    op: str
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        """The requirement in the API's text syntax (what ``labelSelector=`` takes)."""
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return f"!{self.key}"
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        return f"{self.key}{self.op}{self.values[0]}"

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        raise AssertionError(self.op)


@dataclass(frozen=True)
class FieldRequirement:
    """One ``field=value`` (or ``!=``) term of a field selector, matched the way the API server
    matches it, so the simulator answers a field-selected list as a real server would."""

    field: str
    value: str
    negate: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, self.field) == self.value) != self.negate


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside ``(...)`` (``k in (a,b),x=y``)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _check_key(key: str, text: str) -> str:
    if not _KEY.match(key):
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r} in {text!r}")
    return key


def _check_value(value: str, text: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value {value!r} in {text!r}")
    return value


_SET_RE = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


def parse_label_selector(text: str | None) -> tuple[LabelRequirement, ...]:
    """Parse ``labelSelector``; an empty string selects everything."""
    if not text:
        return ()
    out = []
    for part in _split_top(text):
        m = _SET_RE.match(part)
        if m:
            values = tuple(_check_value(v.strip(), part) for v in m.group(3).split(",") if v.strip())
            out.append(LabelRequirement(_check_key(m.group(1), part), m.group(2), values))
        elif part.startswith("!"):
            out.append(LabelRequirement(_check_key(part[1:].strip(), part), "!"))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            out.append(LabelRequirement(_check_key(k.strip(), part), "!=", (_check_value(v.strip(), part),)))
        elif "==" in part:
            k, v = part.split("==", 1)
            out.append(LabelRequirement(_check_key(k.strip(), part), "=", (_check_value(v.strip(), part),)))
        elif "=" in part:
            k, v = part.split("=", 1)
            out.append(LabelRequirement(_check_key(k.strip(), part), "=", (_check_value(v.strip(), part),)))
        else:
            out.append(LabelRequirement(_check_key(part, part), "exists"))
    return tuple(out)


#: ``matchExpressions`` operators -> the text syntax's operator
_OBJECT_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def requirements_of(selector: Mapping[str, Any] | None) -> tuple[LabelRequirement, ...] | None:
    """The requirements of a ``metav1.LabelSelector`` object; ``None`` when it selects nothing.

    ``None`` (no selector), a malformed object or an unknown operator select nothing, as the
    scheduler treats a selector it cannot convert; ``{}`` selects everything (``()``).
    """
    if not isinstance(selector, Mapping):
        return None
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return None
    out = [LabelRequirement(str(k), "=", (str(v),)) for k, v in match_labels.items()]
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, Mapping) or expr.get("operator") not in _OBJECT_OPS:
            return None
        values = tuple(str(v) for v in expr.get("values") or [])
        out.append(LabelRequirement(str(expr.get("key", "")), _OBJECT_OPS[str(expr["operator"])], values))
    return tuple(out)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any]) -> bool:
    """A ``metav1.LabelSelector`` object against labels: ``None`` matches nothing, ``{}`` everything."""
    requirements = requirements_of(selector)
    if requirements is None:
        return False
    plain = {str(k): str(v) for k, v in labels.items()}
    return all(r.matches(plain) for r in requirements)


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """A selector object as the text a list call takes (``""`` for none: callers list everything)."""
    return ",".join(str(r) for r in requirements_of(selector) or ())


def selector_text(selector: Mapping[str, Any] | None) -> str:
    """A selector object the way a person reads it (``app=cache, tier in (a, b)``)."""
    if not isinstance(selector, Mapping):
        return "(no selector: matches nothing)"
    labels = selector.get("matchLabels") or {}
    parts = [f"{k}={v}" for k, v in labels.items()] if isinstance(labels, Mapping) else []
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, Mapping):
            continue
        values = ", ".join(str(v) for v in expr.get("values") or [])
        op = str(expr.get("operator", ""))
        suffix = f" ({values})" if values else ""
        parts.append(f"{expr.get('key')} {op.lower() if op in ('In', 'NotIn') else op}{suffix}")
    return ", ".join(parts) or "(every pod)"


def labels_match(requirements: Sequence[LabelRequirement], labels: Mapping[str, str]) -> bool:
    """All requirements hold for ``labels`` (an empty selector matches everything)."""
    return all(r.matches(labels) for r in requirements)


#: field labels each kind accepts, beyond metadata.name / metadata.namespace (as the real API).
FIELD_LABELS: dict[str, frozenset[str]] = {
    "Pod": frozenset(
        {
            "metadata.uid",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    "Event": frozenset(
        {
            "metadata.uid",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    "Node": frozenset({"metadata.uid", "spec.unschedulable"}),
    "Namespace": frozenset({"metadata.uid", "status.phase"}),
    "Job": frozenset({"metadata.uid", "status.successful"}),
    "ReplicaSet": frozenset({"metadata.uid", "status.replicas"}),
}


def _unescape_split(text: str, sep: str) -> list[str]:
    """Split on ``sep`` honouring backslash escapes, as the API's field selector parser does."""
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            i += 2
            continue
        if text.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def parse_field_selector(text: str | None, kind: str) -> tuple[FieldRequirement, ...]:
    """Parse ``fieldSelector``; unknown field labels raise like the real API (400)."""
    if not text:
        return ()
    allowed = FIELD_LABELS.get(kind, frozenset()) | {"metadata.name", "metadata.namespace"}
    out = []
    for part in _unescape_split(text, ","):
        part = part.strip()
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                field, value = part.split(op, 1)
                negate = op == "!="
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field = field.strip()
        if field not in allowed:
            known = ", ".join(sorted(allowed))
            raise SelectorError(f'"{field}" is not a known field selector: only "{known}"')
        out.append(FieldRequirement(field, value.strip(), negate))
    return tuple(out)


#: the API's field sets render some unset fields as Go zero values, not as "".
_FIELD_DEFAULTS = {"spec.unschedulable": "false", "spec.hostNetwork": "false", "status.successful": "0"}


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string the API compares for a field label: missing fields are the empty string."""
    if path == "source":
        src = obj.get("source") or {}
        return str(src.get("component", "")) if isinstance(src, dict) else ""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return _FIELD_DEFAULTS.get(path, "")
        cur = cur.get(part)
        if cur is None:
            return _FIELD_DEFAULTS.get(path, "")
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _field_reader(path: str) -> Callable[[Mapping[str, Any]], str]:
    """``field_value`` for one path, its parts split once: a list call matches every object of
    its kind (100,000 pods for a cluster-wide phase selector), so the per-object work is a few
    dict lookups."""
    if path == "source":
        return lambda obj: field_value(obj, path)
    parts = tuple(path.split("."))
    default = _FIELD_DEFAULTS.get(path, "")

    def read(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for part in parts:
            if not isinstance(cur, dict):
                return default
            cur = cur.get(part)
            if cur is None:
                return default
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return cur if isinstance(cur, str) else str(cur)

    return read


def _field_matcher(fields: tuple[FieldRequirement, ...]) -> Callable[[Mapping[str, Any]], bool]:
    """The field requirements as one predicate: per field, the value it must equal (all of the
    ``=`` requirements at once) and the set it must not be in (``status.phase!=Succeeded,
    status.phase!=Failed``), each field read once per object."""
    by_field: dict[str, tuple[set[str], set[str]]] = {}
    for f in fields:
        equal, other = by_field.setdefault(f.field, (set(), set()))
        (other if f.negate else equal).add(f.value)
    checks = [(_field_reader(field), frozenset(equal), frozenset(other))
              for field, (equal, other) in by_field.items()]

    def match(obj: Mapping[str, Any]) -> bool:
        for read, equal, other in checks:
            value = read(obj)
            if value in other or (equal and (len(equal) > 1 or value not in equal)):
                return False
        return True

    return match


def matcher(
    labels: tuple[LabelRequirement, ...], fields: tuple[FieldRequirement, ...]
) -> Callable[[Mapping[str, Any]], bool] | None:
    """One predicate for both selectors, or None when everything matches (the fast path)."""
    if not labels and not fields:
        return None
    fields_match = _field_matcher(fields)
    if not labels:
        return fields_match

    def match(obj: Mapping[str, Any]) -> bool:
        return labels_match(labels, meta_of(obj).get("labels") or {}) and fields_match(obj)

    return match
