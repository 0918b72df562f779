"""``--anonymize``: node, namespace, pod and workload names (and node addresses) renamed
consistently across a capture, so a report does not disclose a company's naming.

Pure. The names the diagnosis reasons about stay: system namespaces, the GPU stack (device
plugins, operators, qGPU, HAMi: recognised by name, so renaming them would change the findings)
and the namespaces those live in. A renamed value is replaced wherever a whole string equals it
(names, namespaces, nodeName, owner and involved-object references, label and selector values,
``nodes:`` keys) and, for names distinctive enough not to collide with ordinary words (five
characters or more), inside free text such as event messages. The mapping is returned to be shown
to the user, never written into the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from bot.kube.gpu import is_gpu_component

Obj = dict[str, Any]

#: namespaces whose names carry meaning for the checks (system vs tenant)
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
#: a name is replaced inside free text only when this long (shorter ones collide with words)
MIN_TEXT_NAME = 5
#: what may not touch a name replaced in free text: ``-`` and ``.`` may (``NAME.17a3f`` event
#: names, ``gpubot-node-NAME`` agent pods, ``NAME-7f9c5d`` ReplicaSets of a renamed Deployment)
_WORD_CHARS = "A-Za-z0-9_"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _component(obj: Obj) -> bool:
    return is_gpu_component(str(_meta(obj).get("name", "")), _meta(obj).get("labels") or {})


def build_mapping(objects: Iterable[Obj], *, keep_namespaces: Iterable[str] = ()) -> dict[str, str]:
    """Old name -> new name for nodes (and their addresses), namespaces, pods and workloads."""
    objs = list(objects)
    kept_ns = set(SYSTEM_NAMESPACES) | set(keep_namespaces)
    kept_ns |= {str(_meta(o).get("namespace", "")) for o in objs if _component(o)}
    mapping: dict[str, str] = {}

    def add(old: str, prefix: str, counter: dict[str, int]) -> None:
        if old and old not in mapping:
            counter[prefix] = counter.get(prefix, 0) + 1
            mapping[old] = f"{prefix}-{counter[prefix]}"

    counts: dict[str, int] = {}
    for node in sorted((o for o in objs if o.get("kind") == "Node"), key=lambda o: str(_meta(o).get("name"))):
        add(str(_meta(node).get("name", "")), "node", counts)
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") in ("InternalIP", "ExternalIP") and address.get("address"):
                n = len([v for v in mapping.values() if v.startswith("10.255.")])
                mapping.setdefault(str(address["address"]), f"10.255.{n // 250}.{n % 250 + 1}")
    for ns in sorted({str(_meta(o).get("name")) for o in objs if o.get("kind") == "Namespace"} - kept_ns):
        add(ns, "ns", counts)
    for obj in sorted(objs, key=lambda o: (str(o.get("kind")), str(_meta(o).get("name")))):
        kind = str(obj.get("kind", ""))
        if kind in ("Node", "Namespace", "Event") or _component(obj):
            continue
        if str(_meta(obj).get("namespace", "")) in kept_ns:
            continue
        add(str(_meta(obj).get("name", "")), kind.lower(), counts)
    return mapping


def _text_pattern(mapping: dict[str, str]) -> re.Pattern[str] | None:
    names = sorted((n for n in mapping if len(n) >= MIN_TEXT_NAME), key=len, reverse=True)
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(rf"(?<![{_WORD_CHARS}])(?:{alternatives})(?![{_WORD_CHARS}])")


def apply_mapping(value: Any, mapping: dict[str, str]) -> Any:
    """``value`` (objects, node sections, notes) with every mapped name replaced.

    Mapping keys are left alone (a label key is not a name); ``rename_keys`` does the node sections.
    """
    pattern = _text_pattern(mapping)

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str):
            if v in mapping:
                return mapping[v]
            return pattern.sub(lambda m: mapping[m.group(0)], v) if pattern is not None else v
        return v

    return walk(value)


def rename_keys(sections: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """A mapping keyed by name (``nodes:``, ``capture.unreachable``), keys and values renamed."""
    return {mapping.get(k, k): apply_mapping(v, mapping) for k, v in sections.items()}
