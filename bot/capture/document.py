"""The capture file: a scenario document with a header comment, as YAML text.

``bot.sim.scenario`` loads it like any hand-written scenario. Besides the scenario keys it has a
``capture:`` section (ignored by the loader) saying when and how it was taken, which nodes could
not be read and why, and what the redaction removed (counts only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.yamlio.dump import dump_yaml

Obj = dict[str, Any]
_SAFE_ID = re.compile(r"[^a-z0-9-]+")


@dataclass
class Capture:
    """What was captured, before it is written."""

    cluster: str
    taken_at: datetime
    node_access: str
    version: str
    objects: list[Obj]
    nodes: dict[str, Obj]
    #: node -> why it could not be read
    unreachable: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    redacted: str = ""
    #: ``--anonymize``: old name -> new name (shown to the user, never written into the file)
    mapping: dict[str, str] = field(default_factory=dict)

    @property
    def stamp(self) -> str:
        return self.taken_at.strftime("%Y-%m-%dT%H:%M:%SZ")

    def scenario_id(self) -> str:
        name = _SAFE_ID.sub("-", self.cluster.lower()).strip("-") or "cluster"
        return f"capture-{name}-{self.taken_at.strftime('%Y%m%dT%H%M%SZ')}"


def to_document(cap: Capture) -> Obj:
    """The scenario mapping (``scenario``, ``summary``, ``kubernetes``, ``nodes``, ``capture``)."""
    kinds: dict[str, int] = {}
    for obj in cap.objects:
        kinds[str(obj.get("kind"))] = kinds.get(str(obj.get("kind")), 0) + 1
    counted = ", ".join(f"{n} {k}" for k, n in kinds.items())
    return {
        "scenario": cap.scenario_id(),
        "summary": f"captured from cluster {cap.cluster} at {cap.stamp} ({counted}; {len(cap.nodes)} GPU node(s) read)",
        "kubernetes": {"version": cap.version or "v1.28.0", "objects": cap.objects},
        "nodes": cap.nodes,
        "capture": {
            "cluster": cap.cluster,
            "taken_at": cap.stamp,
            "node_access": cap.node_access,
            "unreachable": dict(cap.unreachable),
            "notes": list(cap.notes),
            "redacted": cap.redacted,
            "anonymized": bool(cap.mapping),
        },
    }


def header(cap: Capture) -> str:
    lines = [
        f"gpubot capture of cluster {cap.cluster!r} at {cap.stamp} (node reads via {cap.node_access}).",
        "REDACTED: env values, secret-looking args/labels/annotations, managedFields and embedded",
        "specs are removed; Secrets and ConfigMaps were never read (docs/capture.md lists the rules).",
        "Review it before sharing. Replay: gpubot sim FILE, or any diagnosis with --scenario FILE.",
    ]
    return "".join(f"# {line}\n" for line in lines)


def render(cap: Capture) -> str:
    """The whole file: header comment, then the YAML document."""
    body = dump_yaml(to_document(cap), width=120)
    return header(cap) + body
