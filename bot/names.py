"""Validation of user-supplied names before they reach any API call.

User text never reaches a shell; these checks also keep it out of API paths, so that a
rejected name costs no request at all.
"""

from __future__ import annotations

import re

from bot.errors import InvalidNameError

MAX_NAME = 253
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

WORKLOAD_KINDS: dict[str, str] = {
    "pod": "Pod",
    "po": "Pod",
    "pods": "Pod",
    "deployment": "Deployment",
    "deploy": "Deployment",
    "deployments": "Deployment",
    "statefulset": "StatefulSet",
    "sts": "StatefulSet",
    "statefulsets": "StatefulSet",
    "job": "Job",
    "jobs": "Job",
    "replicaset": "ReplicaSet",
    "rs": "ReplicaSet",
    "replicasets": "ReplicaSet",
    "daemonset": "DaemonSet",
    "ds": "DaemonSet",
    "daemonsets": "DaemonSet",
}


def _shown(text: str) -> str:
    """A short, printable rendering of rejected input for a one-line error."""
    clipped = text[:40] + ("…" if len(text) > 40 else "")
    return ascii(clipped)


def validate_name(name: str, *, what: str = "name") -> str:
    """Return ``name`` if it is a valid DNS-1123 subdomain (pods, nodes, most objects)."""
    if not name:
        raise InvalidNameError(f"invalid {what}: empty")
    if len(name) > MAX_NAME or not _DNS1123_SUBDOMAIN.match(name):
        raise InvalidNameError(
            f"invalid {what} {_shown(name)}: must be lowercase letters, digits, '-' or '.', "
            f"at most {MAX_NAME} characters"
        )
    return name


def validate_namespace(name: str) -> str:
    """Namespaces are DNS-1123 labels: no dots, at most 63 characters."""
    if not name or len(name) > 63 or not _DNS1123_LABEL.match(name):
        raise InvalidNameError(
            f"invalid namespace {_shown(name)}: must be a DNS-1123 label (lowercase, digits, '-', ≤63)"
        )
    return name


def parse_target(text: str) -> tuple[str, str]:
    """Split ``POD`` or ``KIND/NAME`` into (Kind, name), validating both parts."""
    if "/" in text:
        kind_text, _, name = text.partition("/")
        kind = WORKLOAD_KINDS.get(kind_text.lower())
        if kind is None:
            raise InvalidNameError(
                f"unknown kind {_shown(kind_text)}: use pod, deployment, statefulset, job or replicaset"
            )
        return kind, validate_name(name, what=f"{kind.lower()} name")
    return "Pod", validate_name(text, what="pod name")
