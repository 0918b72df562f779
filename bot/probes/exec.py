"""Run a fixed read command inside a container through the API's ``pods/exec`` (WebSocket).

Only commands from ``EXEC_COMMANDS`` may run: they are constants, never built from user text; the
pod, namespace and container names are validated and passed as API parameters. ``run_read`` runs
the node read commands (``bot.probes.ssh.READ_COMMANDS``, nothing else) in the gpubot node agent.

``ExecStream`` is the WebSocket itself and checks no list: ``PodExec`` here (reads) and
``bot.actions.actuator`` (the node actions' own list) each enforce theirs before calling it. It
tells a stream that closed before the exit status (``code`` None: the answer was lost) from one
still open at the deadline (``timed_out``).

The stream speaks ``v4.channel.k8s.io`` itself (``bot.probes.websocket``), on the event loop,
with the address, credentials, TLS and proxy settings of the cluster's ``kubernetes`` client
configuration. The official client's ``stream()`` runs websocket-client in a thread per exec, with
no timeout on the upgrade: through the node agent, node-status over 500 nodes spent most of its
CPU there (bench/bench_node_status.py).
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlencode

from kubernetes import client

from bot.errors import KubeApiError, NotFoundError
from bot.probes.agent_reads import AGENT_READ_COMMANDS
from bot.probes.api_transport import CredentialHeaders, ssl_context
from bot.probes.container_commands import EXEC_COMMANDS
from bot.probes.ssh import MAX_OUTPUT_BYTES, READ_COMMANDS, CommandResult
from bot.probes.websocket import BINARY, Endpoint, HandshakeError, ProtocolError, connect

_ALLOWED = {tuple(v) for v in EXEC_COMMANDS.values()}
#: the official client's name for the request this module sends itself (the WebSocket upgrade of
#: ``GET /api/v1/namespaces/NS/pods/NAME/exec``): the RBAC the chart grants is derived from the
#: client calls named in the code (tests/deploy/kube_calls.py), and this is where exec is made
EXEC_CALL = ("CoreV1Api", "connect_get_namespaced_pod_exec")
#: the channel.k8s.io framing: first byte of each binary message
_STDOUT, _STDERR, _ERROR = 1, 2, 3
_PROTOCOL = "v4.channel.k8s.io"


@dataclass(frozen=True)
class ExecOutput:
    """What one exec printed, and how it ended."""

    stdout: str
    stderr: str
    #: the exit code; None when the stream ended without the exit status (lost, or timed out)
    code: int | None
    #: the stream was still open at the deadline (the command may still be running)
    timed_out: bool = False


def _exit_code(status_text: str | None) -> int:
    """Read the exit code from the error channel's Status document."""
    if not status_text:
        return 0
    try:
        status = json.loads(status_text) if isinstance(status_text, str) else status_text
    except ValueError:
        return 1
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message", 1))
            except ValueError:
                return 1
    return 1


@functools.lru_cache(maxsize=64)
def _exec_query(argv: tuple[str, ...], container: str) -> str:
    """The exec parameters, URL-encoded once per command: the combined node read is over a
    kilobyte of shell, and quoting it again for every node cost more than the connection."""
    params = [("command", word) for word in argv]
    return urlencode([*params, ("container", container), ("stdout", "true"), ("stderr", "true")])


class _Channels:
    """Output gathered per channel, each capped (a runaway command must not fill the memory)."""

    def __init__(self) -> None:
        self.data: dict[int, bytearray] = {_STDOUT: bytearray(), _STDERR: bytearray(), _ERROR: bytearray()}

    def add(self, message: bytes) -> None:
        if not message:
            return
        buffer = self.data.get(message[0])
        if buffer is not None and len(buffer) <= MAX_OUTPUT_BYTES:
            buffer += message[1 : MAX_OUTPUT_BYTES + 2 - len(buffer)]

    def text(self, channel: int) -> str:
        return self.data[channel].decode("utf-8", errors="replace")


class ExecStream:
    """One argv in one container over ``pods/exec``.

    No allow-list here: every caller checks its own first (see the module docstring).
    """

    def __init__(self, api_client: client.ApiClient, *, timeout: float = 15.0) -> None:
        self.api_client = api_client
        self.timeout = timeout
        cfg = api_client.configuration
        self._base = str(cfg.host).rstrip("/")
        self._ssl = ssl_context(cfg)
        self._server_hostname = getattr(cfg, "tls_server_name", None) or None
        self._proxy = cfg.proxy or None
        self._headers = CredentialHeaders(api_client)

    async def stream_exec(
        self, namespace: str, pod: str, container: str, argv: list[str], *, timeout: float | None = None
    ) -> ExecOutput:
        """Run ``argv``; ``KubeApiError`` (``NotFoundError`` for 404) when the API refuses it or the
        upgrade is not answered within ``timeout``."""
        limit = self.timeout if timeout is None else timeout
        endpoint = Endpoint(
            f"{self._base}/api/v1/namespaces/{namespace}/pods/{pod}/exec",
            self._ssl,
            self._server_hostname,
            self._proxy,
        )
        where = f"exec in {namespace}/{pod}"
        # one deadline for the upgrade and the answer together, as the caller's limit means
        deadline = asyncio.get_running_loop().time() + limit
        try:
            async with asyncio.timeout_at(deadline):
                ws = await connect(endpoint, _exec_query(tuple(argv), container), self._headers(), _PROTOCOL)
        except HandshakeError as exc:
            if exc.status == 404:
                raise NotFoundError(f"pod {namespace}/{pod}: not found") from None
            raise KubeApiError(f"{where}: API error {exc.status}", status=exc.status) from None
        except TimeoutError:
            raise KubeApiError(f"{where}/{container}: timed out") from None
        except (ProtocolError, OSError, ssl.SSLError) as exc:
            raise KubeApiError(f"{where}/{container}: {type(exc).__name__}") from None
        channels = _Channels()
        timed_out = False
        try:
            async with asyncio.timeout_at(deadline):
                while (message := await ws.receive()) is not None:
                    if message[0] == BINARY:
                        channels.add(message[1])
        except TimeoutError:
            timed_out = True
        except (ProtocolError, OSError, ssl.SSLError):
            pass  # the stream broke: what arrived is kept, the exit status decides
        finally:
            await ws.close()
        status = channels.text(_ERROR)
        code = _exit_code(status) if status else None
        return ExecOutput(channels.text(_STDOUT), channels.text(_STDERR), code, timed_out=timed_out and code is None)


class PodExec(ExecStream):
    """Executes allow-listed read commands in containers."""

    async def run(self, namespace: str, pod: str, container: str, argv: list[str]) -> tuple[str, str, int]:
        if tuple(argv) not in _ALLOWED:
            raise ValueError("command is not on the exec allow-list")
        out = await self.stream_exec(namespace, pod, container, argv)
        return out.stdout, out.stderr, 0 if out.code is None else out.code

    async def run_read(
        self, namespace: str, pod: str, container: str, command: str, *, timeout: float | None = None
    ) -> CommandResult:
        """One node read command (``READ_COMMANDS``, the SSH list, or one of the agent's own
        ``AGENT_READ_COMMANDS``) run in the node agent's container.

        ``sh -c`` because the commands are the very strings SSH sends (one has a glob). An exec
        stream that closes before its exit status is a truncated answer, one still open at the
        deadline a timed-out one: both ``KubeApiError``.
        """
        if command not in READ_COMMANDS and command not in AGENT_READ_COMMANDS:
            raise ValueError("command is not on the node read allow-list")
        out = await self.stream_exec(namespace, pod, container, ["sh", "-c", command], timeout=timeout)
        if out.timed_out:
            raise KubeApiError(f"exec in {namespace}/{pod}: timed out (no exit status within the deadline)")
        if out.code is None:
            why = "output truncated (the stream closed before the exit status)"
            raise KubeApiError(f"exec in {namespace}/{pod}: {why}")
        return CommandResult(out.stdout[:MAX_OUTPUT_BYTES], out.stderr[:MAX_OUTPUT_BYTES], out.code)
