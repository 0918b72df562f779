"""The diagnosis result every command returns and every view renders.

A report is plain data: the CLI prints it as text or JSON, Slack renders it as Block Kit, tests
read its codes. The JSON shape is a public contract (see README):
``{"command", "target", "findings", "skipped", "elapsed_ms"}`` plus optional ``nodes``, and for a
diagnosis ``complete`` with the structured ``unreadable`` reads. Findings
``{"command", "target", "findings", "skipped", "elapsed_ms"}`` plus optional ``nodes`` and
``story`` (the pod's own story, ``bot.report.story``). Findings
stay one flat list (each with its ``subject``); grouping them by cause is a view's business
(``bot.views.groups``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bot.errors import ApiRead, KubeApiError
from bot.report.pending import PendingAnswer
from bot.report.story import PodStory

Severity = Literal["critical", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Remediation:
    """An action a finding offers; it only ever runs behind a confirmation."""

    action: str
    params: dict[str, str]
    summary: str


@dataclass
class Finding:
    """One diagnosis result with a stable code from ``findings.md``."""

    code: str
    severity: Severity
    title: str
    evidence: list[str] = field(default_factory=list)
    explanation: str = ""
    next_steps: list[str] = field(default_factory=list)
    remediations: list[Remediation] = field(default_factory=list)
    #: lower sorts first among findings of equal severity: how likely this is the root cause
    rank: int = 50
    #: the object the finding is about (``node/NAME``, ``pod/NS/NAME``); views group by it
    subject: str = ""
    #: the code of the finding in the same report that explains this one (the catalogue's
    #: ``consequence_of``); views fold it under that cause. Empty: it stands on its own
    explained_by: str = ""
    #: the case of the catalogue entry it was worded in (``Detection.role``); not in the JSON
    role: str = ""

    def sort_key(self) -> tuple[int, int]:
        """Most likely root cause first: severity, then rank."""
        return SEVERITY_RANK.get(self.severity, 9), self.rank

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("rank")
        data.pop("role")
        if not self.explained_by:  # additive: only consequences carry the field
            data.pop("explained_by")
        return data


@dataclass
class CardRow:
    """One card of a node as nvidia-smi showed it, with the working verdict and its pods."""

    index: int | None
    uuid: str
    name: str
    utilization: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    processes: int = 0
    verdict: str = "unknown"
    #: tuples, not lists: a fleet's node-status builds thousands of cards, most holding nothing,
    #: and an empty tuple is no new object (fewer objects for the collector to count and scan)
    pods: tuple[str, ...] = ()
    #: UIDs of pods that no longer exist whose kubelet checkpoint entry still names this card
    gone_holders: tuple[str, ...] = ()


@dataclass
class NodeRow:
    """One GPU node: the API's logical allocation beside the physical truth.

    ``logical`` maps a GPU resource to its capacity, allocatable and requested amounts. The
    physical columns stay empty when the node could not be read; ``ssh`` says why.
    """

    node: str
    ready: bool
    cordoned: bool
    taints: list[str] = field(default_factory=list)
    logical: dict[str, dict[str, float]] = field(default_factory=dict)
    ssh: str = "not checked"
    kubelet: str | None = None
    driver: str | None = None
    cuda: str | None = None
    driver_path: str | None = None
    notes: list[str] = field(default_factory=list)
    gpus: list[CardRow] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)
    components: list[str] = field(default_factory=list)
    #: UIDs of pods that no longer exist whose kubelet checkpoint entry holds devices here that
    #: cannot be tied to one card (qGPU slices): the node's idle, unheld cards are what they hold
    gone_holders: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.ssh != "ok":  # physical columns are meaningless for a node that was not read
            for key in ("kubelet", "driver", "cuda", "driver_path", "notes"):
                data.pop(key)
        return data


#: how a skipped read of one node's physical facts is named; any other skip means a whole kind of
#: fact or check is missing from the report
NODE_READ_SKIP = "physical checks on"
#: why a node whose turn never came is skipped
DEADLINE_SKIP = "not read within the command's deadline"
#: node names a text or Slack view shows per reason (every one is in the JSON ``skipped`` list)
SHOWN_UNREAD_NODES = 8


@dataclass(frozen=True)
class Skipped:
    """A probe that could not run, and why; the rest of the report still stands."""

    what: str
    why: str

    @property
    def node_read(self) -> bool:
        """Only some nodes' physical facts are missing (the rest of the report is complete)."""
        return self.what.startswith(NODE_READ_SKIP)

    @property
    def node(self) -> str:
        """The one node this skip is about (``physical checks on NODE``); "" for any other skip."""
        rest = self.what.removeprefix(NODE_READ_SKIP + " ") if self.node_read else ""
        return rest if rest and " " not in rest else ""


def skip_pairs(skipped: list[Skipped], *, shown: int = SHOWN_UNREAD_NODES) -> list[tuple[str, str]]:
    """The skipped list as a person reads it: ``(what, why)`` per entry, except that unread nodes
    are grouped by reason: ``physical checks on 68 nodes (a, b, … and 60 more)``, why.

    With 300 nodes and 100 hung, a hundred ``physical checks on NODE: ssh timeout`` lines would
    bury the report; one line per reason says how many and which. The JSON keeps one entry per
    node (``Report.to_dict``), so every unread node is still named with its reason.
    """
    groups: dict[str, list[str]] = {}
    order: list[Skipped] = []  # other skips as they are, and the first skip of each reason
    for skip in skipped:
        if not skip.node:
            order.append(skip)
        elif skip.why not in groups:
            groups[skip.why] = [skip.node]
            order.append(skip)
        else:
            groups[skip.why].append(skip.node)
    pairs = []
    for skip in order:
        nodes = groups.get(skip.why, []) if skip.node else []
        if len(nodes) > 1:
            names = ", ".join(nodes[:shown]) + (f" and {len(nodes) - shown} more" if len(nodes) > shown else "")
            pairs.append((f"{NODE_READ_SKIP} {len(nodes)} nodes ({names})", skip.why))
        else:
            pairs.append((skip.what, skip.why))
    return pairs


def skip_lines(skipped: list[Skipped]) -> list[str]:
    """``skip_pairs`` as ``what: why`` lines (the text views)."""
    return [f"{what}: {why}" for what, why in skip_pairs(skipped)]


@dataclass(frozen=True)
class Unreadable:
    """A read the answer needed and did not get: nothing was concluded from it.

    ``error`` is the class a person acts on (``bot.errors.ReadErrorKind``, or ``internal`` for a
    bug in gpubot); ``detail`` the short reason; ``request`` the API read itself when there was
    one (the RBAC rule a refused read needs is worked out from it).
    """

    read: str
    error: str
    detail: str
    server: str = ""
    request: ApiRead | None = None

    @classmethod
    def of(cls, exc: KubeApiError, what: str = "") -> Unreadable:
        """The entry for a failed read; ``what`` names it when the error does not say which."""
        read = exc.read.text() if exc.read is not None else what
        return cls(read or what, exc.kind, exc.detail, exc.server, exc.read)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"read": self.read, "error": self.error, "detail": self.detail}
        if self.server:
            data["server"] = self.server
        if self.request is not None:
            data.update(verb=self.request.verb, resource=self.request.resource,
                        namespace=self.request.namespace, group=self.request.group)
        return data


@dataclass
class Report:
    """Everything one command found."""

    command: str
    target: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    elapsed_ms: int = 0
    cluster: str = ""
    #: per-node rows for node-status (logical beside physical); empty for other commands
    nodes: list[NodeRow] = field(default_factory=list)
    #: preformatted guidance text (``runbook NAME``, ``help``); empty for diagnoses
    text: str = ""
    #: per-user authority: the Kubernetes identity the diagnosis read as (empty: the bot's own)
    read_as: str = ""
    #: reads that failed (unreachable, TLS, timeout, 401, 403, 5xx/429): the answer is incomplete
    unreadable: list[Unreadable] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every read the answer rests on was read (or found absent)."""
        return not self.unreadable
    #: the target pod's own story when it is not Running and Ready (``bot.report.story``)
    story: PodStory | None = None
    #: ``pending``: the stuck GPU workloads by cause (``bot.report.pending.PendingAnswer``)
    pending: PendingAnswer | None = None

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def skip(self, what: str, why: str) -> None:
        self.skipped.append(Skipped(what, why))

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def sort(self) -> None:
        """Most likely root cause first: severity, then the finding's own rank (stable)."""
        self.findings.sort(key=Finding.sort_key)

    def verdict(self) -> str:
        """A one-line summary for headers: the top finding's title, or 'no problem found'."""
        if not self.findings:
            return "no problem found"
        return self.findings[0].title

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "command": self.command,
            "target": self.target,
            "cluster": self.cluster,
            "findings": [f.to_dict() for f in self.findings],
            "skipped": [asdict(s) for s in self.skipped],
            "elapsed_ms": self.elapsed_ms,
        }
        if self.nodes:
            data["nodes"] = [row.to_dict() for row in self.nodes]
        if self.text:
            data["text"] = self.text
        if self.read_as:
            data["read_as"] = self.read_as
        if self.command and not self.text:  # a diagnosis says whether it could read everything
            data["complete"] = self.complete
            data["unreadable"] = [u.to_dict() for u in self.unreadable]
        if self.story is not None:
            data["story"] = self.story.to_dict()
        if self.pending is not None:
            data["pending"] = self.pending.to_dict()
        return data
