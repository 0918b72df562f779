"""Read the RBAC rules of rendered ClusterRoles as explicit permissions."""

from __future__ import annotations

from typing import Any

from bot.doctor.kube_calls import Perm


def rules_of(role: dict[str, Any]) -> list[dict[str, Any]]:
    return list(role.get("rules") or [])


def has_wildcard(role: dict[str, Any]) -> bool:
    """A ``*`` anywhere, or a rule by URL or resourceNames we do not model, makes a role unreadable."""
    for rule in rules_of(role):
        for key in ("apiGroups", "resources", "verbs"):
            if "*" in (rule.get(key) or []):
                return True
        if rule.get("nonResourceURLs") or rule.get("resourceNames"):
            return True
    return False


def grants(role: dict[str, Any]) -> set[Perm]:
    """Every (verb, group, resource) the role grants; wildcard-free roles only."""
    assert not has_wildcard(role), f"ClusterRole {role['metadata']['name']} uses a wildcard or URL rule"
    out: set[Perm] = set()
    for rule in rules_of(role):
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    out.add(Perm(verb, group, resource))
    return out
