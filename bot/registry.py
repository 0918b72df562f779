"""Registries of the names a runbook may reference: probes, checks and actions.

Runbooks are data; they can only name things registered here. Probes and checks register by
decorator when their modules are imported (``load_builtin()``). Actions are registered by the
``actions`` package; the engine only needs their *names* to validate runbooks, so the names are
declared here as the public contract and a test pins that the actions package implements exactly
these.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: remediation actions (``findings.md``); every one runs only behind a confirmation
ACTION_NAMES: frozenset[str] = frozenset(
    {
        "pod.delete",
        "qgpu.restart-manager",
        "qgpu.rollout-restart",
        "kubelet.restart",
        "checkpoint.clear",
        "namespace.label",
        "node.cordon",
        "node.uncordon",
    }
)


@dataclass(frozen=True)
class ProbeSpec:
    """A read-only fact gatherer: ``async fn(ctx) -> None`` storing its facts on the context."""

    name: str
    fn: Callable[..., Any]
    #: probes whose facts this one reads; the runner orders by these
    needs: tuple[str, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class CheckSpec:
    """A pure rule over gathered facts: ``fn(ctx) -> None`` emitting findings on the context."""

    name: str
    fn: Callable[..., Any]
    #: probes whose facts it reads (validated: the runbook must list them)
    needs: tuple[str, ...] = ()
    #: triage tables it reads from the runbook (validated: the runbook must define them)
    tables: tuple[str, ...] = ()
    doc: str = ""


@dataclass
class Registry:
    probes: dict[str, ProbeSpec] = field(default_factory=dict)
    checks: dict[str, CheckSpec] = field(default_factory=dict)


REGISTRY = Registry()

#: modules whose import registers the built-in probes and checks
BUILTIN_MODULES: tuple[str, ...] = (
    "bot.probes.facts_kube",
    "bot.probes.facts_node",
    "bot.probes.facts_exec",
    "bot.engine.checks",
)


def probe(name: str, *, needs: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register an async read-only probe under ``name``."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY.probes:
            raise ValueError(f"probe {name!r} registered twice")
        REGISTRY.probes[name] = ProbeSpec(name, fn, needs, (fn.__doc__ or "").strip())
        return fn

    return wrap


def check(
    name: str, *, needs: tuple[str, ...] = (), tables: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a check (a pure rule over facts) under ``name``."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY.checks:
            raise ValueError(f"check {name!r} registered twice")
        REGISTRY.checks[name] = CheckSpec(name, fn, needs, tables, (fn.__doc__ or "").strip())
        return fn

    return wrap


def load_builtin() -> Registry:
    """Import the modules that register built-in probes and checks; idempotent."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    return REGISTRY
