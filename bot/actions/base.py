"""What every remediation action is, and the registry that names them.

An action is a small object registered by name (``@action("kubelet.restart")``). It declares
the parameters it takes, its blast radius (the text of Slack's confirmation dialog, so at most
300 characters), what "done" looks like, a precondition that re-probes the problem, the exact
plan it would follow, and ``run``. ``run`` reports every step's outcome; in dry-run it reports
the plan and changes nothing. A failed step stops the action; the action then tries to restore
what it changed and says exactly what state it left the target in.

This module must never perform I/O itself, and nothing outside ``bot.actions`` may register an
action or call ``run`` without going through ``bot.remediation`` first.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from kubernetes.client import ApiClient

from bot.actions.kube_writes import KubeWriter
from bot.errors import UsageError
from bot.probes.kube import KubeReads
from bot.settings import ClusterConfig, Settings

#: Slack's confirmation dialog text limit; the blast radius must fit it whole
BLAST_RADIUS_LIMIT = 300

StepStatus = Literal["ok", "failed", "skipped", "planned"]


@dataclass(frozen=True)
class StepOutcome:
    """One step as it happened (or, in dry-run, as it would happen)."""

    what: str
    status: StepStatus
    detail: str = ""
    #: already in the audit trail (the journal took it as it happened)
    audited: bool = field(default=False, compare=False)

    def line(self) -> str:
        """``ok: cordon node x — detail``; the form the audit trail and the thread show."""
        return f"{self.status}: {self.what}" + (f" — {self.detail}" if self.detail else "")


@dataclass
class ActionOutcome:
    """What ``run`` reports: did it work, what happened step by step, where the target stands."""

    ok: bool
    summary: str
    steps: list[StepOutcome] = field(default_factory=list)
    dry_run: bool = False
    #: the target's state after the run, in words (``node x: schedulable, Ready, kubelet active``)
    state: str = ""

    def summary_line(self) -> str:
        """The summary, then where the target stands unless the summary already says it."""
        return self.summary + (f" State: {self.state}" if self.state and self.state not in self.summary else "")

    def step_lines(self) -> list[str]:
        """One line per step, as the audit trail and the thread show them."""
        return [s.line() for s in self.steps]


class StepJournal(Protocol):
    """Where a running action's state and steps are recorded (``bot.remediation``'s journal)."""

    async def before(self, step: str, progress: Mapping[str, Any]) -> None:
        """Record the action's state and that ``step`` starts; raises when it cannot be recorded,
        and then the step must not run."""
        ...

    async def after(self, line: str, status: str) -> bool:
        """Record a step's real outcome; False when it could not be recorded (never raises)."""
        ...


@dataclass
class ActionContext:
    """Everything one run of one action may use; built per click by ``bot.remediation``.

    The Kubernetes clients are lent by the caller (the diagnosis service's, in ``serve``): the
    context never closes them. Writes go only through ``writer``, built here on the lent connection.
    """

    action: str
    #: validated parameters (``Action.check_params``)
    params: Mapping[str, str]
    settings: Settings
    cluster: ClusterConfig
    #: Kubernetes reads straight from the API server (the probes' facade; never a cache: a
    #: precondition must see the cluster as it is now)
    kube: KubeReads
    #: the cluster's API connection that ``writer`` uses
    api: ApiClient
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    #: the finding that offered the action, when it came from a diagnosis
    finding_code: str | None = None
    #: the pending action's id (names the checkpoint backup; empty outside a confirmed run)
    action_id: str = ""
    #: records the state and each step before it runs (None: nothing is recorded, e.g. dry run)
    journal: StepJournal | None = None
    #: what the precondition learnt (pod uid, cordoned or not…), read again by ``plan``/``run``
    facts: dict[str, Any] = field(default_factory=dict)

    def param(self, name: str) -> str:
        return self.params.get(name, "")

    @cached_property
    def writer(self) -> KubeWriter:
        """The only Kubernetes writes an action may make, on the lent connection."""
        return KubeWriter(self.api, timeout=self.settings.api_timeout_s)


class Action(Protocol):
    """A registered remediation."""

    name: str
    #: one line for the button's confirmation dialog: who is affected and the known hazards
    blast_radius: str
    #: what "done" looks like, in words (shown with the plan)
    done: str

    def check_params(self, params: Mapping[str, str]) -> dict[str, str]:
        """The parameters, validated; raises ``UsageError`` for missing, extra or bad ones."""
        ...

    def target(self, params: Mapping[str, str]) -> str:
        """The name a CLI user must type to confirm (node, pod or namespace name)."""
        ...

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        """Re-probe: is the problem still there, is the target still as the offer saw it?"""
        ...

    async def plan(self, ctx: ActionContext) -> list[str]:
        """The exact steps ``run`` would take now, in order."""
        ...

    async def run(self, ctx: ActionContext, *, dry_run: bool) -> ActionOutcome: ...

    def max_duration_s(self, settings: Settings) -> float:
        """The longest one run can take, restore included (shutdown waits this long for it)."""
        ...


class BaseAction(abc.ABC):
    """Shared parameter checking and dry-run; subclasses set the class attributes and ``_run``."""

    name: str = ""
    blast_radius: str = ""
    done: str = ""
    #: parameter name -> validator returning the cleaned value
    required: ClassVar[Mapping[str, Callable[[str], str]]] = {}
    optional: ClassVar[Mapping[str, Callable[[str], str]]] = {}
    #: the parameter a CLI user types to confirm
    target_param: ClassVar[str] = ""

    def check_params(self, params: Mapping[str, str]) -> dict[str, str]:
        extra = sorted(set(params) - set(self.required) - set(self.optional))
        if extra:
            raise UsageError(f"{self.name}: unexpected parameter(s) {', '.join(extra)}")
        missing = sorted(k for k in self.required if not params.get(k))
        if missing:
            raise UsageError(f"{self.name}: missing parameter(s) {', '.join(missing)}")
        out = {k: check(str(params[k])) for k, check in self.required.items()}
        out.update({k: check(str(params[k])) for k, check in self.optional.items() if params.get(k)})
        return out

    def target(self, params: Mapping[str, str]) -> str:
        return str(params.get(self.target_param, "")) if self.target_param else self.name

    def max_duration_s(self, settings: Settings) -> float:
        # a handful of API calls, each bounded by the API timeout and retried at most twice
        return 12 * settings.api_timeout_s

    @abc.abstractmethod
    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        """Re-probe: does the problem this action fixes still exist? (ok, why)"""

    @abc.abstractmethod
    async def plan(self, ctx: ActionContext) -> list[str]:
        """The exact steps, in order, as a person would read them."""

    async def run(self, ctx: ActionContext, *, dry_run: bool) -> ActionOutcome:
        if dry_run:
            steps = [StepOutcome(s, "planned") for s in await self.plan(ctx)]
            return ActionOutcome(
                True,
                f"dry run: {self.name} would take {len(steps)} step(s); nothing was changed.",
                steps,
                dry_run=True,
            )
        return await self._run(ctx)

    @abc.abstractmethod
    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        """Do it for real (only called after the confirmation and the precondition)."""


#: every registered action by name (filled by importing ``bot.actions``)
ACTIONS: dict[str, Action] = {}
_A = TypeVar("_A", bound=type[BaseAction])


def action(name: str) -> Callable[[_A], _A]:
    """Register one instance of the decorated class under ``name``."""

    def wrap(cls: _A) -> _A:
        if name in ACTIONS:
            raise ValueError(f"action {name!r} registered twice")
        if not cls.blast_radius or len(cls.blast_radius) > BLAST_RADIUS_LIMIT:
            raise ValueError(f"action {name!r}: blast_radius must be 1..{BLAST_RADIUS_LIMIT} characters")
        cls.name = name
        ACTIONS[name] = cls()
        return cls

    return wrap


def get_action(name: str) -> Action:
    """The registered action, or ``UsageError`` naming the known ones."""
    found = ACTIONS.get(name)
    if found is None:
        raise UsageError(f"unknown action {name!r}; known: {', '.join(sorted(ACTIONS))}")
    return found
