"""Run a fixed read command inside a container through the API's ``pods/exec`` (WebSocket).

Only commands from ``EXEC_COMMANDS`` may run: they are constants, never built from user text; the
pod, namespace and container names are validated and passed as API parameters. ``run_read`` runs
the node read commands (``bot.probes.ssh.READ_COMMANDS``, nothing else) in the gpubot node agent.

``ExecStream`` is the WebSocket itself and checks no list: ``PodExec`` here (reads) and
``bot.actions.actuator`` (the node actions' own list) each enforce theirs before calling it. It
tells a stream that closed before the exit status (``code`` None: the answer was lost) from one
still open at the deadline (``timed_out``), and runs each exec in a daemon thread: the official
client's WebSocket handshake has no timeout, so an API server that never answers the upgrade
must not keep a terminal command or the bot's shutdown waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

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
_T = TypeVar("_T")


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


class _DaemonWorkers:
    """Daemon threads kept for the next exec.

    ``Thread.start`` waits until the new thread has run, and under load that wait is the event
    loop's: at one thread per exec, node-status over 500 nodes through the agent blocked the loop
    for about 1.4 s just starting threads. A worker that finished waits ``IDLE_S`` for more work
    and then exits; when no worker is idle a new one starts, so an exec stuck in the client (the
    WebSocket handshake has no timeout) never delays another, and none holds up the exit.
    """

    IDLE_S = 30.0

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        #: workers waiting for work that no submitted job has claimed yet
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # this job claims one waiting worker
        self._work.put(job)
        if spawn:
            threading.Thread(target=self._run, name="gpubot-exec", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                job = self._work.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # unclaimed: leave
                        self._idle -= 1
                        return
                continue  # claimed meanwhile: its job is on the queue
            job()
            with self._lock:
                self._idle += 1


_WORKERS = _DaemonWorkers()


async def _in_daemon_thread(work: Callable[[], _T]) -> _T:
    """``work()`` in a daemon thread: a call stuck in a library without a timeout never holds up
    the event loop's shutdown or the process's exit (``asyncio.to_thread`` threads would)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def settle(result: _T | None, error: BaseException | None) -> None:
        if done.done():
            return  # the caller gave up waiting (its deadline)
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def body() -> None:
        result: _T | None = None
        error: BaseException | None = None
        try:
            result = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task as is
            error = exc
        # the loop closed meanwhile: nobody waits for this answer any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    _WORKERS.submit(body)
    return await done


class ExecStream:
    """One argv in one container over ``pods/exec``; one dedicated ApiClient (stream() patches it).

    No allow-list here: every caller checks its own first (see the module docstring).
    """

    def __init__(self, api_client: client.ApiClient, *, timeout: float = 15.0) -> None:
        self._core = client.CoreV1Api(api_client)
        self.api_client = api_client
        self.timeout = timeout

    async def stream_exec(
        self, namespace: str, pod: str, container: str, argv: list[str], *, timeout: float | None = None
    ) -> ExecOutput:
        """Run ``argv``; ``KubeApiError`` (``NotFoundError`` for 404) when the API refuses it or the
        answer does not come within ``timeout`` plus a margin."""
        limit = self.timeout if timeout is None else timeout

        def do() -> ExecOutput:
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
            try:
                resp.run_forever(timeout=limit)
                timed_out = resp.is_open()
                # what run_forever buffered; timeout=0: a stream still open must not block here
                stdout = resp.read_stdout(timeout=0) or ""
                stderr = resp.read_stderr(timeout=0) or ""
                status = resp.read_channel(3)
                code = _exit_code(status) if status else None
            finally:
                resp.close()
            return ExecOutput(stdout, stderr, code, timed_out=timed_out and code is None)

        try:
            # not asyncio.wait_for: on Python 3.11 it returns the result and swallows a cancellation
            # that arrives as the exec finishes, so a cancelled node action would run on
            async with asyncio.timeout(limit + 5):
                return await _in_daemon_thread(do)
        except TimeoutError:
            raise KubeApiError(f"exec in {namespace}/{pod}/{container}: timed out") from None


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
        """One node read command (``READ_COMMANDS``, the SSH list) run in the node agent's container.

        ``sh -c`` because the commands are the very strings SSH sends (one has a glob). An exec
        stream that closes before its exit status is a truncated answer, one still open at the
        deadline a timed-out one: both ``KubeApiError``.
        """
        if command not in READ_COMMANDS:
            raise ValueError("command is not on the node read allow-list")
        out = await self.stream_exec(namespace, pod, container, ["sh", "-c", command], timeout=timeout)
        if out.timed_out:
            raise KubeApiError(f"exec in {namespace}/{pod}: timed out (no exit status within the deadline)")
        if out.code is None:
            why = "output truncated (the stream closed before the exit status)"
            raise KubeApiError(f"exec in {namespace}/{pod}: {why}")
        return CommandResult(out.stdout[:MAX_OUTPUT_BYTES], out.stderr[:MAX_OUTPUT_BYTES], out.code)
