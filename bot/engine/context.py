"""The state one diagnosis carries from probes to checks to the report.

Probes store facts here under their own name; checks read facts and ``emit`` finding codes
with parameters and evidence. The runner turns emissions into findings using the runbooks'
catalogue, so the wording lives in YAML and the logic in Python.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.commands import Invocation
from bot.probes.kube import KubeReads
from bot.probes.ssh_pool import SshPool
from bot.report import Remediation, Report
from bot.settings import ClusterConfig, Settings


@dataclass
class Emission:
    """A check's verdict before wording: a code, its template parameters and evidence."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    #: remediations with their parameters; None = the catalogue's default offers, unparameterised
    remediations: list[Remediation] | None = None
    #: overrides the catalogue rank (lower = more likely the root cause)
    rank: int | None = None
    #: extra next steps specific to this case, shown before the catalogue's
    next_steps: list[str] = field(default_factory=list)
    #: overrides the catalogue severity when the check knows this instance is the cause
    severity: str | None = None


#: runs a fixed read command in a container: (namespace, pod, container, argv) -> (stdout, stderr, exit)
ExecFn = Callable[[str, str, str, list[str]], Awaitable[tuple[str, str, int]]]


@dataclass
class Context:
    """Everything a probe or check may use for one invocation."""

    inv: Invocation
    settings: Settings
    cluster: ClusterConfig
    kube: KubeReads
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    emissions: list[Emission] = field(default_factory=list)
    report: Report = field(default_factory=lambda: Report(command="", target={}))
    exec_fn: ExecFn | None = None
    #: kept SSH connections (long-running bot only); None = one connection per node per question
    ssh_pool: SshPool | None = None

    def emit(
        self,
        code: str,
        *,
        evidence: list[str] | None = None,
        remediations: list[Remediation] | None = None,
        rank: int | None = None,
        next_steps: list[str] | None = None,
        severity: str | None = None,
        **params: Any,
    ) -> None:
        self.emissions.append(
            Emission(
                code, dict(params), list(evidence or []), remediations, rank, list(next_steps or []), severity
            )
        )

    def skip(self, what: str, why: str) -> None:
        self.report.skip(what, why)

    def fact(self, name: str, default: Any = None) -> Any:
        return self.facts.get(name, default)

    def has(self, code: str) -> bool:
        return any(e.code == code for e in self.emissions)
