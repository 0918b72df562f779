"""Run a fixed read command inside a container through the API's ``pods/exec`` (WebSocket).

Only commands from ``EXEC_COMMANDS`` may run: they are constants, never built from user text; the
pod, namespace and container names are validated and passed as API parameters. ``run_read`` runs
the node read commands (``bot.probes.ssh.READ_COMMANDS``, nothing else) in the gpubot node agent.
"""

from __future__ import annotations

import asyncio
import json
import re

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream

from bot.errors import KubeApiError, NotFoundError
from bot.probes.ssh import MAX_OUTPUT_BYTES, READ_COMMANDS, CommandResult

TORCH_PROBE = (
    "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), "
    "torch.cuda.device_count())"
)

#: name -> argv; the only things gpubot ever runs in a container
EXEC_COMMANDS: dict[str, list[str]] = {
    "nvidia_smi": ["nvidia-smi"],
    "dev_nvidia": ["sh", "-c", "ls -l --time-style=full-iso /dev/nvidia*"],
    "driver_version": ["cat", "/proc/driver/nvidia/version"],
    "pid1": ["cat", "/proc/1/comm"],
    "torch": ["python", "-c", TORCH_PROBE],
    "env": ["env"],
}
_ALLOWED = {tuple(v) for v in EXEC_COMMANDS.values()}
_HANDSHAKE = re.compile(r"Handshake status (\d{3})")


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


class PodExec:
    """Executes allow-listed commands in containers; one dedicated ApiClient (stream() patches it)."""

    def __init__(self, api_client: client.ApiClient, *, timeout: float = 15.0) -> None:
        self._core = client.CoreV1Api(api_client)
        self.timeout = timeout

    async def run(self, namespace: str, pod: str, container: str, argv: list[str]) -> tuple[str, str, int]:
        if tuple(argv) not in _ALLOWED:
            raise ValueError("command is not on the exec allow-list")
        stdout, stderr, code = await self._exec(namespace, pod, container, argv)
        return stdout, stderr, 0 if code is None else code

    async def run_read(
        self, namespace: str, pod: str, container: str, command: str, *, timeout: float | None = None
    ) -> CommandResult:
        """One node read command (``READ_COMMANDS``, the SSH list) run in the node agent's container.

        ``sh -c`` because the commands are the very strings SSH sends (one has a glob). An exec
        stream that closes before its exit status is a truncated answer: ``KubeApiError``.
        """
        if command not in READ_COMMANDS:
            raise ValueError("command is not on the node read allow-list")
        stdout, stderr, code = await self._exec(namespace, pod, container, ["sh", "-c", command], timeout=timeout)
        if code is None:
            why = "output truncated (the stream closed before the exit status)"
            raise KubeApiError(f"exec in {namespace}/{pod}: {why}")
        return CommandResult(stdout[:MAX_OUTPUT_BYTES], stderr[:MAX_OUTPUT_BYTES], code)

    async def _exec(
        self, namespace: str, pod: str, container: str, argv: list[str], *, timeout: float | None = None
    ) -> tuple[str, str, int | None]:
        """(stdout, stderr, exit code); the code is None when the status never came."""
        limit = self.timeout if timeout is None else timeout

        def do() -> tuple[str, str, int | None]:
            try:
                resp = stream(
                    self._core.connect_get_namespaced_pod_exec,
                    pod,
                    namespace,
                    container=container,
                    command=argv,
                    stderr=True,
                    stdin=False,
                    stdout=True,
                    tty=False,
                    _preload_content=False,
                    _request_timeout=limit,
                )
            except ApiException as exc:
                # a refused WebSocket upgrade comes back as status 0 with "Handshake status 403 ..."
                found = _HANDSHAKE.search(str(exc.reason or ""))
                if not exc.status and found:
                    exc.status = int(found.group(1))
                if exc.status == 404:
                    raise NotFoundError(f"pod {namespace}/{pod}: not found") from None
                raise KubeApiError(
                    f"exec in {namespace}/{pod}: API error {exc.status}", status=exc.status
                ) from None
            except Exception as exc:  # noqa: BLE001 - websocket errors vary by library version
                raise KubeApiError(f"exec in {namespace}/{pod}/{container}: {type(exc).__name__}") from None
            out: list[str] = []
            err: list[str] = []
            try:
                resp.run_forever(timeout=limit)
                # timeout=0: take what run_forever buffered; the default (None) waits for the
                # next frame forever, so a hung exec would hold this thread for good
                out.append(resp.read_stdout(timeout=0) or "")
                err.append(resp.read_stderr(timeout=0) or "")
                status = resp.read_channel(3)
                code = _exit_code(status) if status else None
            finally:
                resp.close()
            return "".join(out), "".join(err), code

        try:
            return await asyncio.wait_for(asyncio.to_thread(do), timeout=limit + 5)
        except TimeoutError:
            raise KubeApiError(f"exec in {namespace}/{pod}/{container}: timed out") from None
