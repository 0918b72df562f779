"""The one interface every check implements: typed facts in, detections out.

A check is a module under ``bot/engine/checks/`` that defines ``CHECK = Check(...)``. It names
the facts it reads (the runner gathers exactly those, in dependency order) and the finding codes
it may emit (the runner refuses any other), each a ``Code`` with its parameters declared as a
``TypedDict``; its ``run`` yields ``Detection``s: a code, the object it is about, those
parameters (the catalogue's templates fill from them) and evidence lines. Rank, severity, wording and the
offered fixes live in the runbooks, so a check never ranks, words or renders anything, and it
never sees what another check found: the order of checks in a runbook cannot change a result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bot.kube.objects import meta_of
from bot.report import Skipped

if TYPE_CHECKING:
    from bot.engine.facts import Facts


@dataclass(frozen=True)
class Detection:
    """A check's verdict before wording.

    ``subject`` names the object the finding is about (``pod/ns/name``, ``node/NAME``); views
    group by it. ``role`` selects a case of the catalogue entry (``roles:`` in findings.yaml),
    for instance ``cause`` when a Terminating holder is what blocks the asked pod; ``ASIDE``
    says that a finding about a node cannot be why the asked pod waits, so nothing about the pod
    is folded under it (``bot.engine.consequences``).
    """

    code: str
    subject: str
    params: Mapping[str, Any] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    role: str = ""


#: the role of a node's finding that is true but not why the asked pod waits (a Terminating pod
#: holding one card where the pod needs eight): reported, never the pod's explanation
ASIDE = "aside"

#: the declared parameters of one finding code: a ``TypedDict``
P = TypeVar("P", bound=Mapping[str, Any])


class Code(str, Generic[P]):
    """A finding code with the parameters its detections carry, declared once beside the check.

    ``TERMINATING = Code("TERMINATING_HOLDS_GPU", TerminatingHolds)``, where ``TerminatingHolds``
    is a ``TypedDict``: mypy checks every ``TERMINATING.detect(subject, {...})`` against it (a
    misspelt or missing parameter is a type error in the check), and ``gpubot runbooks validate``
    checks every placeholder, ``when``/``each`` binding and offer parameter of the code's
    catalogue entry against the same declaration. It is a ``str``, so it compares, hashes and
    serialises as the bare code.
    """

    params: type[P]

    def __new__(cls, code: str, params: type[P]) -> Code[P]:
        self = super().__new__(cls, code)
        self.params = params
        return self

    def detect(self, subject: str, params: P, *, evidence: Iterable[str] = (), role: str = "") -> Detection:
        """A detection of this code about ``subject`` (``pod/ns/name``, ``node/NAME``)."""
        return Detection(str(self), subject, dict(params), tuple(str(e) for e in evidence), role)


#: what a check may yield: a detection, or a note that part of it could not be decided
Outcome = Detection | Skipped
RunFn = Callable[["Facts"], Iterable[Outcome]]


@dataclass(frozen=True)
class Check:
    """A named rule over typed facts."""

    name: str
    #: ``Facts`` accessors it reads; the runner gathers them (and what they need) first
    reads: tuple[str, ...]
    #: finding codes it may emit, each with its declared parameters; anything else is a bug the
    #: runner reports
    emits: tuple[Code[Any], ...]
    run: RunFn
    #: runbook tables it reads through ``facts.table(name)``
    tables: tuple[str, ...] = ()
    #: facts gathered for it that only sharpen its answer: when one may not be read (per-user
    #: authority) the check still runs and sees it empty, instead of being skipped
    refines: tuple[str, ...] = ()
    #: the parts of ``run`` that rest on one node's reading (``bot.engine.per_node.PerNode``):
    #: worked out as each node answers, where the runbook reads the nodes
    per_node: tuple[Any, ...] = ()  # PerNode (which imports this module)

    @property
    def doc(self) -> str:
        return (self.run.__doc__ or "").strip()


def pod_subject(pod: Mapping[str, Any]) -> str:
    meta = meta_of(pod)
    return f"pod/{meta.get('namespace', '')}/{meta.get('name', '')}"


def node_subject(name: str) -> str:
    return f"node/{name}"
