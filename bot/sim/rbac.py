"""A small RBAC table for the simulator, so per-user authority can be tried offline.

A scenario's ``rbac:`` section lists rules; each names subjects (``user:NAME``, ``group:NAME``),
verbs (``get``, ``list``, ``watch``, … or ``*``), resources (plural names, ``pods/exec`` for a
subresource, or ``*``) and optionally namespaces (absent: every namespace and the cluster-scoped
resources). A request carrying ``Impersonate-User`` (and ``Impersonate-Group`` headers) is
allowed when one rule matches the user or one of the groups; anything else gets the 403 a real
API server sends. Without an ``rbac:`` section nothing impersonated is checked.

Requests without impersonation are the bot's own (its service account, ``BOT_USER``): allowed,
unless the scenario has an ``rbac_bot:`` section, the bot's own rules (``verbs``, ``resources``,
``namespaces``; no subjects), so a scenario can say the bot lacks ``pods/exec`` or ``list nodes``.
A SelfSubjectAccessReview is answered from the same table. This module decides only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: who the bot's own requests come from: the chart's service account in the default namespace
BOT_USER = "system:serviceaccount:gpubot:gpubot"
_BOT_SUBJECT = f"user:{BOT_USER}"


@dataclass(frozen=True)
class RbacRule:
    """One allow rule of the simulated API server's RBAC: who may do which verbs on which resources,
    and where."""

    subjects: frozenset[str]
    verbs: frozenset[str]
    resources: frozenset[str]
    #: empty: all namespaces and cluster-scoped resources
    namespaces: frozenset[str] = frozenset()

    def matches(self, subjects: Iterable[str], verb: str, resource: str, namespace: str | None) -> bool:
        if self.subjects.isdisjoint(subjects):
            return False
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        if "*" not in self.resources and resource not in self.resources:
            return False
        return not self.namespaces or (namespace is not None and namespace in self.namespaces)


@dataclass(frozen=True)
class RbacTable:
    """The simulated API server's RBAC, so tests see the 403 a real server gives a bot with too few
    rights."""

    rules: tuple[RbacRule, ...]

    def allows(self, user: str, groups: Iterable[str], verb: str, resource: str, namespace: str | None) -> bool:
        subjects = {f"user:{user}", *(f"group:{g}" for g in groups)}
        return any(rule.matches(subjects, verb, resource, namespace) for rule in self.rules)


def forbidden_message(user: str, verb: str, resource: str, namespace: str | None) -> str:
    """The message a real API server gives, e.g. ``pods is forbidden: User "alice" cannot list …``."""
    plural, _, sub = resource.partition("/")
    what = f'resource "{plural}"' + (f' subresource "{sub}"' if sub else "")
    scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    return f'{plural} is forbidden: User "{user}" cannot {verb} {what}{scope}'


def load_rbac(raw: Any, add_problem: Any) -> RbacTable | None:
    """The ``rbac:`` section (a list of rules), or None when absent; problems go to ``add_problem``."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        add_problem("rbac", "must be a list of {subjects, verbs, resources, namespaces}")
        return None
    rules = []
    for i, item in enumerate(raw):
        where = f"rbac[{i}]"
        if not isinstance(item, dict) or set(item) - {"subjects", "verbs", "resources", "namespaces"}:
            add_problem(where, "must be a mapping of subjects, verbs, resources and optional namespaces")
            continue
        lists = {k: item.get(k) or [] for k in ("subjects", "verbs", "resources", "namespaces")}
        if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in lists.values()):
            add_problem(where, "subjects, verbs, resources and namespaces must be lists of strings")
            continue
        bad = [s for s in lists["subjects"] if not s.startswith(("user:", "group:"))]
        if bad or not lists["subjects"] or not lists["verbs"] or not lists["resources"]:
            add_problem(where, "needs subjects (user:NAME or group:NAME), verbs and resources")
            continue
        rules.append(RbacRule(*(frozenset(lists[k]) for k in ("subjects", "verbs", "resources", "namespaces"))))
    return RbacTable(tuple(rules))


def load_bot_rbac(raw: Any, add_problem: Any) -> RbacTable | None:
    """The ``rbac_bot:`` section (rules without subjects: they are the bot's), or None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(r, dict) and "subjects" not in r for r in raw):
        add_problem("rbac_bot", "must be a list of {verbs, resources, namespaces} (the bot's own rules, no subjects)")
        return None
    problems: list[tuple[str, str]] = []
    table = load_rbac([{**r, "subjects": [_BOT_SUBJECT]} for r in raw], lambda w, m: problems.append((w, m)))
    for where, message in problems:
        add_problem(where.replace("rbac", "rbac_bot", 1), message.replace("subjects (user:NAME or group:NAME), ", ""))
    return table
