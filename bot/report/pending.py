"""The answer of ``gpubot pending``: causes, each with its workloads, worst first.

Plain data, shared by the terminal text (``bot.pending.render``), the Slack blocks
(``bot.slack.pending_blocks``) and ``--json``/``-o json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: how a cause's finding severity orders the list (worst first), as ``Finding.sort_key`` does
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
#: the cause of a workload the engine found nothing wrong with (no finding code: not a finding)
NO_CAUSE = "-"


@dataclass
class PendingLine:
    """One workload (or bare pod) whose GPU pods do not run."""

    namespace: str
    #: as typed to why-pending: ``POD`` or ``deployment/NAME``
    workload: str
    pods: int
    #: the oldest stuck pod's age (kubectl AGE)
    age: str
    code: str
    #: the fix in a few words (the finding's first fix, else its first next step)
    fix: str
    #: True when the engine diagnosed this workload itself; False for one counted "like" a diagnosed
    #: one (same pod state, GPU ask and scheduler message) without its own diagnosis
    diagnosed: bool = True


@dataclass
class PendingGroup:
    """Workloads that share one root cause (a finding code)."""

    code: str
    severity: str
    title: str
    rank: int = 50
    lines: list[PendingLine] = field(default_factory=list)

    @property
    def pods(self) -> int:
        return sum(line.pods for line in self.lines)

    def sort_key(self) -> tuple[int, int, int]:
        return SEVERITY_ORDER.get(self.severity, 3), self.rank, -self.pods


@dataclass
class PendingAnswer:
    """Every stuck GPU workload of the scope, by cause."""

    #: the namespace asked about; empty for every namespace (``-A``)
    namespace: str
    groups: list[PendingGroup] = field(default_factory=list)
    #: workloads found but neither diagnosed nor like a diagnosed one (over the bound, or the deadline)
    undiagnosed: list[PendingLine] = field(default_factory=list)
    #: why ``undiagnosed`` were not diagnosed
    undiagnosed_why: str = ""
    stuck_pods: int = 0
    workloads: int = 0
    diagnoses: int = 0
    #: the bound on full diagnoses this answer ran under
    bound: int = 0
    #: False when the pods could not be listed: nothing is known, "nothing waits" may not be said
    scanned: bool = True

    @property
    def scope(self) -> str:
        return f"namespace {self.namespace}" if self.namespace else "all namespaces"

    def summary(self) -> str:
        """The one line on top: how much is stuck, by how many causes, how much was diagnosed."""
        if not self.scanned:
            return f"Could not list the pods of {self.scope}: whether GPU work waits there is not known."
        if not self.stuck_pods:
            return f"No GPU pod is waiting in {self.scope}."
        causes = len(self.groups)
        like = sum(1 for g in self.groups for line in g.lines if not line.diagnosed)
        parts = [
            f"{self.stuck_pods} GPU pod(s) not running in {self.workloads} workload(s), {self.scope}:",
            f"{causes} cause(s); {self.diagnoses} diagnosed",
        ]
        if like:
            parts.append(f", {like} like a diagnosed one")
        if self.undiagnosed:
            parts.append(f", {len(self.undiagnosed)} not diagnosed ({self.undiagnosed_why})")
        return parts[0] + " " + "".join(parts[1:]) + "."

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace or None,
            "all_namespaces": not self.namespace,
            "summary": self.summary(),
            "scanned": self.scanned,
            "stuck_pods": self.stuck_pods,
            "workloads": self.workloads,
            "diagnoses": self.diagnoses,
            "bound": self.bound,
            "causes": [
                {"code": g.code, "severity": g.severity, "title": g.title, "pods": g.pods,
                 "workloads": [asdict(line) for line in g.lines]}
                for g in self.groups
            ],
            "undiagnosed": [asdict(line) for line in self.undiagnosed],
            "undiagnosed_why": self.undiagnosed_why,
        }
