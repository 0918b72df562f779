"""The exception tree of gpubot.

Errors from libraries (kubernetes ApiException, asyncssh errors, OSError) are translated at the
client boundary into these, so that every layer above can show ``user_message`` to a person
without leaking a traceback, a token or a host key.

    GpubotError
    ├── UsageError            bad command line / slash-command input (exit 2)
    │   └── InvalidNameError  a name that is not a valid Kubernetes name
    ├── NotAuthorizedError    per-user authority: the asker has no Kubernetes identity mapped
    ├── ConfigError           bad settings; the bot refuses to start
    ├── ScenarioError         a scenario file that cannot be loaded (names the file)
    ├── RunbookError          a runbook file that does not validate (file:line)
    ├── ProbeError            a read failed; the report marks it skipped
    │   ├── KubeApiError      the Kubernetes API answered an error or did not answer
    │   │   └── NotFoundError the object does not exist
    │   └── NodeProbeError    SSH to a node failed (refused, timeout, auth, host key)
    ├── ActionError           a remediation step failed
    └── StateStoreError       the pending actions / audit trail cannot be read or written
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


class GpubotError(Exception):
    """Base of every error gpubot raises on purpose; ``str()`` is safe to show a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.user_message = message


class UsageError(GpubotError):
    """The input cannot be run: wrong arguments, unknown subcommand."""


class InvalidNameError(UsageError):
    """A name that Kubernetes would reject; it never reaches an API call or a shell."""


class NotAuthorizedError(GpubotError):
    """Per-user authority is on and the asker is mapped to no Kubernetes identity."""


class ConfigError(GpubotError):
    """The configuration is invalid; raised at start-up, never mid-request."""


class ScenarioError(GpubotError):
    """A scenario file is malformed; the message names the file and the problem."""


class RunbookError(GpubotError):
    """One or more runbook files are invalid; ``problems`` holds ``file:line: what`` lines."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems) if problems else "invalid runbook")
        self.problems = problems


class ProbeError(GpubotError):
    """A read-only probe could not get its facts."""


#: how a read failed, as a person acts on it: the server could not be reached (refused, DNS,
#: reset), TLS failed, it accepted and never answered, it rejected the credentials (401), the
#: identity may not read this (403), or it answered an error (5xx, 429, other) after the retries
ReadErrorKind = Literal["unreachable", "tls", "timeout", "unauthorized", "forbidden", "failed", "not_found"]


@dataclass(frozen=True)
class ApiRead:
    """One API read as RBAC names it: what a failed read was, so a report can say which reads a
    failure cost and which rule would grant a refused one."""

    verb: str
    #: the plural resource (``pods``, ``nodes``, ``daemonsets``)
    resource: str
    #: empty for cluster-scoped objects and for lists across every namespace
    namespace: str = ""
    #: the object's name for a ``get``
    name: str = ""
    #: the API group ("" for the core group, ``apps``, ``batch``)
    group: str = ""
    #: the list's label or field selector, if any
    selector: str = ""

    def text(self) -> str:
        """``get pod ai/p``, ``list pods in ai``, ``list nodes``, ``list pods (spec.nodeName=n1)``."""
        if self.verb == "get":
            where = f"{self.namespace}/{self.name}" if self.namespace else self.name
            return f"get {self.resource.removesuffix('s')} {where}"
        where = f" in {self.namespace}" if self.namespace else ""
        return f"list {self.resource}{where}" + (f" ({self.selector})" if self.selector else "")


class KubeApiError(ProbeError):
    """The Kubernetes API failed (5xx, 429 after retries, timeout, connection refused).

    ``kind`` classifies it (``ReadErrorKind``), ``read`` names the request, ``server`` is the API
    server's URL (never with credentials) and ``detail`` the short reason ("connection refused",
    "500 Internal Server Error after 3 tries"); all optional for errors raised outside reads.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        kind: ReadErrorKind | None = None,
        read: ApiRead | None = None,
        server: str = "",
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind: ReadErrorKind = kind or _kind_of_status(status)
        self.read = read
        self.server = server
        self.detail = detail or message


def _kind_of_status(status: int | None) -> ReadErrorKind:
    if status is None:
        return "unreachable"
    return {401: "unauthorized", 403: "forbidden", 404: "not_found"}.get(status, "failed")  # type: ignore[return-value]


class NotFoundError(KubeApiError):
    """The requested object does not exist (HTTP 404)."""

    def __init__(self, message: str, *, read: ApiRead | None = None, server: str = "") -> None:
        super().__init__(message, status=404, kind="not_found", read=read, server=server)


#: the switch that reads nodes the other way, named by every node-read failure (by transport)
NODE_ACCESS_SWITCH: dict[str, str] = {
    "ssh": "--node-access agent (setting node_access) reads through the gpubot-node agent instead",
    "agent": "--node-access ssh (setting node_access, with ssh_key_path) reads over SSH instead",
}


class NodeProbeError(ProbeError):
    """Reading a node failed; ``reason`` is one of refused, timeout, auth, host-key, error (and,
    through the node agent, agent-missing); ``via`` names the transport (ssh or agent), and the
    message the switch that changes it: the fix is often the other transport, not this one."""

    def __init__(self, node: str, reason: str, detail: str = "", *, via: str = "ssh") -> None:
        text = f"node {node}: {via} {reason}" + (f" ({detail})" if detail else "")
        if via in NODE_ACCESS_SWITCH:
            text += f"; {NODE_ACCESS_SWITCH[via]}"
        super().__init__(text)
        self.node = node
        self.reason = reason
        self.detail = detail
        self.via = via


class ActionError(GpubotError):
    """A remediation step failed; the message says what state things were left in."""


class StateStoreError(GpubotError):
    """The state store (pending actions, the audit trail) cannot be read or written.

    A step whose audit record cannot be written does not run; the message says why (disk full,
    read-only file, locked too long) and never carries a path's contents or SQL.
    """


def error_text(exc: BaseException) -> str:
    """One line that says what failed: our own errors' user message, else type and message.

    Never a traceback: this line goes into chat messages and the audit trail.
    """
    message = str(exc).strip()
    if isinstance(exc, GpubotError):
        message = exc.user_message.strip()
    elif message:
        message = f"{type(exc).__name__}: {message}"
    line = message.splitlines()[0] if message else type(exc).__name__
    return line if len(line) <= 300 else line[:300] + "…"
