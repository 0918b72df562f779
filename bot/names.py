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
    # custom batch workloads (bot/kube/batch_workloads.py): what Kueue and Volcano queue
    "jobset": "JobSet",
    "jobsets": "JobSet",
    "rayjob": "RayJob",
    "rayjobs": "RayJob",
    "raycluster": "RayCluster",
    "rayclusters": "RayCluster",
    "mpijob": "MPIJob",
    "mpijobs": "MPIJob",
    "vcjob": "VcJob",
    "vcjobs": "VcJob",
}


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` as typed, except that characters which would not print are escaped.

    A name like ``pød-1`` stays ``pød-1``; an escape sequence, a newline or an invisible
    formatting character (``\\x1b``, ``\\n``, ``\\u202e``) is shown as its escape, so echoed
    input can neither drive a terminal nor break a one-line message.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: str, *, limit: int = 40) -> str:
    """Rejected input for a one-line error: quoted, clipped to ``limit`` characters, printable."""
    clipped = text[:limit] + ("…" if len(text) > limit else "")
    return f"'{printable(clipped)}'"


def validate_name(name: str, *, what: str = "name") -> str:
    """Return ``name`` if it is a valid DNS-1123 subdomain (pods, nodes, most objects)."""
    if not name:
        raise InvalidNameError(f"invalid {what}: empty")
    if len(name) > MAX_NAME or not _DNS1123_SUBDOMAIN.match(name):
        raise InvalidNameError(
            f"invalid {what} {shown(name)}: must be lowercase letters, digits, '-' or '.', "
            f"at most {MAX_NAME} characters"
        )
    return name


def validate_namespace(name: str) -> str:
    """Namespaces are DNS-1123 labels: no dots, at most 63 characters."""
    if not name or len(name) > 63 or not _DNS1123_LABEL.match(name):
        raise InvalidNameError(
            f"invalid namespace {shown(name)}: must be a DNS-1123 label (lowercase, digits, '-', ≤63)"
        )
    return name


def parse_target(text: str) -> tuple[str, str]:
    """Split ``POD`` or ``KIND/NAME`` into (Kind, name), validating both parts."""
    if "/" in text:
        kind_text, _, name = text.partition("/")
        kind = WORKLOAD_KINDS.get(kind_text.lower())
        if kind is None:
            raise InvalidNameError(
                f"unknown kind {shown(kind_text)}: use pod, deployment, statefulset, job, replicaset, "
                "jobset, rayjob, raycluster, mpijob or vcjob"
            )
        return kind, validate_name(name, what=f"{kind.lower()} name")
    return "Pod", validate_name(text, what="pod name")
