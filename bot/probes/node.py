"""Observe GPU nodes: read-only commands, a hard deadline; SSH here, the agent in ``node_agent``.

``observe_node`` runs the fixed read commands of ``bot.probes.ssh.READ_COMMANDS`` over a single
connection (all first reads as one combined command, ``COMBINED_READ``: one round trip) and turns
their output into a ``NodeObservation``. ``observe_nodes`` does that for
many nodes at once, bounded by a semaphore, so that one silent node costs at most its deadline
and never delays the report on the others. ``observe_with`` is the transport-free core: it asks a
``RunReads`` for the commands' results and reads them, so SSH and the node agent read alike.

Retry policy: only ``TransientSshError`` (the node accepted and then dropped the connection, as
sshd does under ``MaxStartups`` throttling) is retried. A refused connection is not: the port is
fixed, nothing listens on it, and retrying only spends the deadline. A timeout is not: the
deadline *is* the budget. Auth and host-key failures are never retried.

This module must never run anything but ``READ_COMMANDS``, and never change a node.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from bot.errors import NodeProbeError
from bot.probes.agent_reads import AGENT_KERNEL_LOG, AGENT_SMI, AGENT_SMI_WHERE, OPERATOR_DRIVER_ROOT, parse_header
from bot.probes.checkpoint import CheckpointError, parse_checkpoint
from bot.probes.devices import LS_DEV_NVIDIA, parse_ls
from bot.probes.gpu_health import (
    ECC_QUERY,
    KERNEL_LOG,
    KERNEL_LOG_DMESG,
    LostGpu,
    has_kernel_lines,
    parse_ecc_report,
    parse_handle_errors,
    parse_kernel_log,
)
from bot.probes.nvidia_smi import (
    APPS_QUERY,
    GPU_QUERY,
    SUMMARY,
    parse_apps_query,
    parse_cuda_version,
    parse_driver_version,
    parse_gpu_query,
    parse_proc_driver_version,
)
from bot.probes.observation import NodeObservation
from bot.probes.ssh import (
    CAT_CHECKPOINT,
    COMBINED_READ,
    DRIVER_VERSION,
    FIRST_READS,
    KUBELET_ACTIVE,
    OPERATOR_PREFIX,
    READ_COMMANDS,
    CommandResult,
    SshTarget,
    TransientSshError,
    open_connection,
    run_command,
    split_reads,
)
from bot.probes.ssh_pool import SshPool

if TYPE_CHECKING:  # imported by bot.probes.ssh when a node is first reached
    import asyncssh

#: channels opened at once on one connection; below OpenSSH's default MaxSessions (10)
CHANNELS_PER_NODE = 4
#: connection attempts when the node drops the connection (see the module docstring)
CONNECT_ATTEMPTS = 3
NOT_FOUND = 127

log = logging.getLogger(__name__)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]


async def _connect(target: SshTarget, *, timeout: float) -> asyncssh.SSHClientConnection:
    # imported with the first SSH connection, as asyncssh is: most commands never open one
    from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(TransientSshError),
        stop=stop_after_attempt(CONNECT_ATTEMPTS),
        wait=wait_exponential(multiplier=0.05, max=0.5),
        reraise=True,
    ):
        with attempt:
            return await open_connection(target, timeout=timeout)
    raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover


async def _run_all(conn: asyncssh.SSHClientConnection, node: str, commands: list[str]) -> dict[str, CommandResult]:
    gate = asyncio.Semaphore(CHANNELS_PER_NODE)

    async def one(command: str) -> CommandResult:
        async with gate:
            return await run_command(conn, command, allowed=READ_COMMANDS, node=node)

    return await each_command(one, commands)


async def each_command(
    one: Callable[[str], Awaitable[CommandResult]], commands: list[str]
) -> dict[str, CommandResult]:
    """Every command's result, by command, the commands run at once; a single command (the combined
    read, on every node of a fleet-wide read) is awaited in place, without a task of its own."""
    if len(commands) == 1:
        return {commands[0]: await one(commands[0])}
    results = await asyncio.gather(*(one(c) for c in commands))
    return dict(zip(commands, results, strict=True))


def _read_nvidia_smi(obs: NodeObservation, gpu: CommandResult, apps: CommandResult, summary: CommandResult) -> None:
    lost = parse_handle_errors(gpu.stdout + "\n" + summary.stdout)
    if gpu.exit_status == 0:
        obs.gpus = parse_gpu_query(gpu.stdout, problems=obs.notes)
    else:
        obs.nvidia_smi_error = _first_line(gpu.stdout) or _first_line(gpu.stderr) or f"exit {gpu.exit_status}"
        obs.notes.append(f"nvidia-smi GPU query failed (exit {gpu.exit_status}): {obs.nvidia_smi_error}")
    if apps.exit_status == 0:
        obs.processes = parse_apps_query(apps.stdout, problems=obs.notes)
    elif gpu.exit_status == 0:
        obs.notes.append(f"nvidia-smi process query failed (exit {apps.exit_status}): {_first_line(apps.stdout)}")
    if summary.exit_status == 0:
        obs.cuda_version = parse_cuda_version(summary.stdout) or ""
        obs.driver_version = parse_driver_version(summary.stdout) or ""
        obs.table_text = summary.stdout  # parsed where it is used (``NodeObservation.table``)
    for row in obs.gpus if "[GPU is lost]" in gpu.stdout else ():  # the usual answer has none
        if any(v.strip() == "[GPU is lost]" for v in row.raw.values()):
            text = f"GPU {row.index} {row.uuid}: [GPU is lost]"
            lost.append(LostGpu(pci="", index=row.index, source="query", text=text))
    for card in obs.table if "ERR!" in obs.table_text else ():
        # one ERR! can be a broken fan sensor; a card whose readings are mostly ERR! is unreachable
        if card.err_cells >= 2 and all(lost_gpu.pci != card.pci for lost_gpu in lost):
            lost.append(LostGpu(pci=card.pci, index=card.index, source="table", text=card.text))
    obs.lost_gpus = lost


def _read_health(
    obs: NodeObservation, ecc: CommandResult, kernel: CommandResult | None, source: str, tried: str = ""
) -> None:
    """ECC counters and the kernel log; a failure is a note, never an error. ``tried``: why the
    agent's own read of the host's log files failed too (it came before dmesg)."""
    if ecc.exit_status == 0:
        obs.ecc = parse_ecc_report(ecc.stdout, problems=obs.notes)
        obs.ecc_read = True
    elif obs.gpus:
        why = _first_line(ecc.stdout) or _first_line(ecc.stderr)
        obs.notes.append(f"nvidia-smi ECC query failed (exit {ecc.exit_status}): {why}")
    if kernel is None:
        return
    if kernel.exit_status != 0 and not has_kernel_lines(kernel.stdout):
        why = _first_line(kernel.stderr) or _first_line(kernel.stdout) or f"exit {kernel.exit_status}"
        if tried:
            obs.notes.append(f"kernel log not readable (journalctl, the host's log files, dmesg): {tried}; {why}")
        else:
            obs.notes.append(f"kernel log not readable (journalctl and dmesg): {why}")
        return
    log = parse_kernel_log(kernel.stdout, problems=obs.notes)
    obs.xids, obs.kernel_errors, obs.kernel_log = log.xids, log.errors, source


def _read_rest(obs: NodeObservation, results: Mapping[str, CommandResult]) -> None:
    cat = results[CAT_CHECKPOINT]
    if cat.exit_status == 0:
        try:
            obs.checkpoint = parse_checkpoint(cat.stdout)
        except CheckpointError as exc:
            obs.checkpoint_error = str(exc)
    elif "No such file" not in cat.stderr:
        obs.checkpoint_error = f"cannot read the checkpoint: {_first_line(cat.stderr) or cat.exit_status}"
    ls = results[LS_DEV_NVIDIA]
    obs.dev_nvidia = parse_ls(ls.stdout)
    if ls.exit_status != 0 and not obs.dev_nvidia:
        obs.notes.append(f"no /dev/nvidia* files: {_first_line(ls.stderr)}")
    obs.kubelet = _first_line(results[KUBELET_ACTIVE].stdout) or "unknown"
    version = results[DRIVER_VERSION]
    from_proc = parse_proc_driver_version(version.stdout) if version.exit_status == 0 else None
    if from_proc:
        if obs.driver_version and obs.driver_version != from_proc:
            obs.notes.append(f"nvidia-smi reports driver {obs.driver_version}, the kernel module {from_proc}")
        obs.driver_version = from_proc
    elif version.exit_status != 0:
        obs.notes.append("no NVIDIA kernel module loaded (/proc/driver/nvidia/version missing)")


async def _connect_for_pool(target: SshTarget, timeout: float) -> asyncssh.SSHClientConnection:
    return await _connect(target, timeout=timeout)


async def _observe(target: SshTarget, deadline: float, pool: SshPool | None = None) -> NodeObservation:
    if pool is None:
        conn = await _connect(target, timeout=deadline)
        async with conn:
            obs = await _observe_on(conn, target)
        return obs
    conn, reused = await pool.get(target, timeout=deadline, connect=_connect_for_pool)
    try:
        return await _observe_on(conn, target)
    except NodeProbeError:
        pool.discard(target)
        if not reused:
            raise
    # the kept connection had gone stale (node rebooted, sshd restarted): one fresh try
    conn, _ = await pool.get(target, timeout=deadline, connect=_connect_for_pool)
    try:
        return await _observe_on(conn, target)
    except NodeProbeError:
        pool.discard(target)
        raise


async def _observe_on(conn: asyncssh.SSHClientConnection, target: SshTarget) -> NodeObservation:
    async def run(commands: list[str]) -> dict[str, CommandResult]:
        return await _run_all(conn, target.node, commands)

    return await observe_with(run, target.node)


#: runs some of ``READ_COMMANDS`` on one node and returns each one's result (NodeProbeError if
#: the node cannot be reached); the transport behind it is SSH or an exec into the node's agent
RunReads = Callable[[list[str]], Awaitable[dict[str, CommandResult]]]


async def _first_reads(run: RunReads) -> dict[str, CommandResult]:
    """``FIRST_READS`` in one round trip (``COMBINED_READ``); one command each where the node's
    shell or an older agent cannot run the combined one (an answer that does not parse back)."""
    combined = (await run([COMBINED_READ]))[COMBINED_READ]
    results = split_reads(combined.stdout) if combined.exit_status == 0 else None
    if results is None:
        results = await run(list(FIRST_READS))
    return results


async def _kernel_log(run: RunReads, journal: CommandResult, agent: bool, obs: NodeObservation) -> tuple[
    CommandResult, str, str
]:
    """(the kernel log's answer, its source, why the agent's own read failed). ``journalctl``
    first; the agent's read of the host's mounted journal files or text logs next (the agent has
    no journalctl); the ring buffer last. Only a readable source is a source."""
    if journal.exit_status == 0 and has_kernel_lines(journal.stdout):
        return journal, "journal", ""
    tried = ""
    if agent:
        own = (await run([AGENT_KERNEL_LOG]))[AGENT_KERNEL_LOG]
        source, where = parse_header(own.stdout)
        skipped = [line.strip() for line in own.stderr.splitlines() if line.strip()]
        if own.exit_status == 0 and source:
            obs.notes.append(f"kernel log read by the agent from {where}")
            obs.notes += [f"kernel log: {line} (not read)" for line in skipped[:3]]
            return own, source, ""
        tried = "; ".join(skipped[:4]) or _first_line(own.stdout) or f"exit {own.exit_status}"
    # no journal, or no access to its kernel messages: the ring buffer has the same lines
    return (await run([KERNEL_LOG_DMESG]))[KERNEL_LOG_DMESG], "dmesg", tried


async def _nvidia_smi_elsewhere(run: RunReads, results: dict[str, CommandResult], agent: bool,
                                obs: NodeObservation) -> None:
    """No nvidia-smi on PATH. Over SSH: the GPU Operator keeps the driver in its own root
    (chroot). In the agent: ``bot.agent nvidia-smi`` runs the one in the host's driver
    directories the chart mounted (``nodeAgent.hostDriver``), and says which it used."""
    smi = [GPU_QUERY, APPS_QUERY, SUMMARY, ECC_QUERY]
    if agent:
        got = await run([AGENT_SMI_WHERE, *(AGENT_SMI[c] for c in smi)])
        where = got[AGENT_SMI_WHERE]
        if where.exit_status != 0:
            why = _first_line(where.stderr) or _first_line(where.stdout) or f"exit {where.exit_status}"
            obs.notes.append(f"{why} (no RuntimeClass put it in the agent; set nodeAgent.runtimeClassName "
                             "or nodeAgent.hostDriver)")
            return
        obs.nvidia_smi_from = _first_line(where.stdout)
        if OPERATOR_DRIVER_ROOT in obs.nvidia_smi_from:
            obs.driver_path = "operator"
        obs.notes.append(f"nvidia-smi from the {obs.nvidia_smi_from}")
        results.update({c: got[AGENT_SMI[c]] for c in smi})
        return
    operator = await run([OPERATOR_PREFIX + c for c in smi])
    if operator[OPERATOR_PREFIX + GPU_QUERY].exit_status != NOT_FOUND:
        obs.driver_path = "operator"
        results.update({c: operator[OPERATOR_PREFIX + c] for c in smi})
    else:
        obs.notes.append("nvidia-smi not found on the host nor under /run/nvidia/driver")


#: set by ``observe_many`` around each node's read, whatever the transport: frees the node's slot
_SLOT_FREE: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("slot_free", default=None)


class _OnePerTurn:
    """Lets one waiter go per turn of the event loop, in order of arrival.

    Parsing a node's answer is the bot's own work and on no node's critical path; the reads' own
    events (a next node's connect, an answer coming in) are. Several answers that came in at once
    would otherwise be parsed back to back in one turn, and the events of that turn queue behind
    all of them; one at a time, at most one parse stands before them."""

    def __init__(self) -> None:
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def turn(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (a test's, or a one-shot command's): start afresh
            self._waiting, self._scheduled, self._loop = collections.deque(), False, loop
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiting.append(waiter)
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._release)
        await waiter

    def _release(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled waiter gives its turn to the next
                waiter.set_result(None)
                break
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._release)  # the next one, on the next turn
        else:
            self._scheduled = False


_PARSE_TURNS = _OnePerTurn()


async def _reads_are_in() -> None:
    """Every read of this node is in: free its slot of the fan-out before the answer is parsed,
    and let the next node's read start first.

    A slot bounds the reads in flight (what the nodes and the API server carry); parsing is the
    bot's own CPU. Parsed while it held the slot, each node's ~0.4 ms of parsing and card
    verdicts came, on every slot, before the next node's connect, all on one event loop: at 500
    nodes through the agent the fan-out took 0.87-0.89 s; freed first, 0.79-0.81 s. A turn of
    the loop lets the waiter of the freed slot start the next node's read; then the answer waits
    for its parse turn (``_OnePerTurn``): at 500 nodes the fan-out took 0.80-0.85 s parsed as
    soon as possible, 0.78-0.80 s one parse per turn (three alternating pairs)."""
    free = _SLOT_FREE.get()
    if free is not None:
        free()
        await asyncio.sleep(0)
        await _PARSE_TURNS.turn()


async def observe_with(run: RunReads, node: str, *, agent: bool = False) -> NodeObservation:
    """The read commands through ``run``, turned into a ``NodeObservation`` (any transport).

    ``agent``: ``run`` execs into the node agent, which also takes ``AGENT_READ_COMMANDS`` (its
    own reads of the host's log files and driver directories, where a root shell has more)."""
    started = time.monotonic()
    obs = NodeObservation(node=node)
    results = await _first_reads(run)

    kernel_log = _kernel_log(run, results[KERNEL_LOG], agent, obs)
    if results[GPU_QUERY].exit_status == NOT_FOUND:
        # the two fallbacks are independent: one round trip for both where both are needed
        (kernel, source, tried), _ = await asyncio.gather(kernel_log, _nvidia_smi_elsewhere(run, results, agent, obs))
    else:  # awaited in place: no task per node for what is, on most nodes, no read at all
        kernel, source, tried = await kernel_log
    await _reads_are_in()
    _read_nvidia_smi(obs, results[GPU_QUERY], results[APPS_QUERY], results[SUMMARY])
    _read_health(obs, results[ECC_QUERY], kernel, source, tried)
    _read_rest(obs, results)
    obs.elapsed_s = time.monotonic() - started
    return obs


async def observe_node(target: SshTarget, *, deadline: float, pool: SshPool | None = None) -> NodeObservation:
    """Everything the read commands show on one node, within ``deadline`` seconds.

    With ``pool`` (the long-running bot) the node's connection is kept for the next question.
    """
    try:
        async with asyncio.timeout(deadline):
            return await _observe(target, deadline, pool)
    except TimeoutError:
        raise NodeProbeError(target.node, "timeout", f"no complete answer within {deadline:g}s") from None


class NodeTransport(Protocol):
    """How the read commands reach a node: ``ssh`` (below) or ``agent`` (``bot.probes.node_agent``).

    ``observe`` answers within ``deadline`` seconds or raises ``NodeProbeError``; both transports
    run the same ``READ_COMMANDS`` and fail with the same reasons, so a check cannot tell them apart.
    """

    name: str

    async def observe(self, node: str, *, deadline: float) -> NodeObservation: ...


class SshTransport:
    """Root (or a read-only user's) SSH to each node, per ``ssh_target_for``."""

    name = "ssh"

    def __init__(self, targets: Mapping[str, SshTarget], *, pool: SshPool | None = None) -> None:
        self.targets = targets
        self.pool = pool

    async def observe(self, node: str, *, deadline: float) -> NodeObservation:
        return await observe_node(self.targets[node], deadline=deadline, pool=self.pool)


#: the shortest time a node holds its probe slot before, still silent, it lets the next node start
MIN_HOLD_S = 0.25
#: the most node reads in flight at once, silent ones included (each is an open socket or stream)
MAX_IN_FLIGHT = 512


def fair_hold(remaining_s: float, concurrency: int, waiting: int) -> float:
    """How long a node may hold its probe slot before a silent one yields it.

    ``concurrency`` slots and ``remaining_s`` seconds give every node still ``waiting`` for a slot
    ``remaining_s * concurrency / waiting`` seconds of slot time; a node that has not answered
    within that share is silent (hung, or very slow) and lets the next node start. It keeps
    reading in the background up to its own deadline, so a slow node is still read; a hung one
    can no longer keep healthy nodes from being read, whatever the order of the two.
    """
    if waiting <= 0:
        return remaining_s
    return max(MIN_HOLD_S, remaining_s * concurrency / waiting)


async def observe_many(
    transport: NodeTransport,
    nodes: list[str],
    *,
    concurrency: int = 16,
    deadline: float = 10.0,
    until: float | None = None,
    first: Collection[str] = (),
    answered: Callable[[str, NodeObservation | NodeProbeError], None] | None = None,
) -> dict[str, NodeObservation | NodeProbeError]:
    """Observe many nodes, at most ``concurrency`` reading at once; a failure is a value, not a raise.

    A node holds its slot while it is being read, not while its answer is parsed (see
    ``_reads_are_in``).

    ``until`` (``time.monotonic()``) bounds the whole call: a node whose turn comes later is not
    read (reason ``deadline``), and no node's own deadline runs past it. Within it a node holds its
    slot for its fair share of the time left (``fair_hold``); still silent then, it yields the
    slot to the next node and goes on in the background until its own deadline (at most
    ``MAX_IN_FLIGHT`` reads in flight in all). So silent nodes cost slot time in proportion to
    their share, and a healthy node is read whenever the deadline allows, whether the hung nodes
    come first, last or in between. ``first``: nodes to start before the others (the likely slow
    ones); the answer keeps the order of ``nodes``. ``answered`` is told each node's result as
    it comes in, so per-node work can be done while the rest are still being read.
    """
    slots = max(1, concurrency)
    gate = asyncio.Semaphore(slots)
    flight = asyncio.Semaphore(max(slots, MAX_IN_FLIGHT))
    waiting = len(nodes)

    async def observe(node: str, budget: float) -> NodeObservation | NodeProbeError:
        try:
            return await transport.observe(node, deadline=budget)
        except NodeProbeError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - one odd node must not sink the whole report
            return NodeProbeError(node, "error", type(exc).__name__)

    async def read(node: str) -> NodeObservation | NodeProbeError:
        nonlocal waiting
        async with flight:
            await gate.acquire()
            waiting -= 1
            held = True
            try:
                now = time.monotonic()
                budget = deadline if until is None else min(deadline, until - now)
                if budget <= 0:
                    return NodeProbeError(node, "deadline", "not read: the command's deadline ran out first")

                def free() -> None:
                    nonlocal held
                    if held:
                        held = False
                        gate.release()

                _SLOT_FREE.set(free)  # this task's own context: the read below runs in it
                hold = budget if until is None else fair_hold(until - now, slots, waiting)
                # silent at the end of its share: the next node starts while this one goes on (a
                # timer, not a task of its own to wait on: one less task per node of a fleet)
                timer = asyncio.get_running_loop().call_later(hold, free) if hold < budget else None
                try:
                    return await observe(node, budget)
                finally:
                    if timer is not None:
                        timer.cancel()
            finally:
                if held:
                    gate.release()

    async def one(node: str) -> NodeObservation | NodeProbeError:
        result = await read(node)
        if answered is not None:
            try:
                answered(node, result)
            except Exception:  # the early work is an optimisation: the report still has the reading
                log.exception("handling node %s's reading early failed", node)
        return result

    early = set(first)
    start = [n for n in nodes if n in early] + [n for n in nodes if n not in early]
    # tasks take the gate in the order they are created (the semaphore wakes waiters in order)
    results = dict(zip(start, await asyncio.gather(*(one(n) for n in start)), strict=True))
    return {n: results[n] for n in nodes}


async def observe_nodes(
    targets: Mapping[str, SshTarget],
    *,
    concurrency: int = 16,
    deadline: float = 10.0,
    pool: SshPool | None = None,
    until: float | None = None,
) -> dict[str, NodeObservation | NodeProbeError]:
    """``observe_many`` over SSH to ``targets``."""
    transport = SshTransport(targets, pool=pool)
    return await observe_many(transport, list(targets), concurrency=concurrency, deadline=deadline, until=until)


def _split_host_port(value: str) -> tuple[str, int]:
    text = value.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.lstrip(":")
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:
        host, port = text, ""
    if not host:
        raise ValueError(f"no host in {value!r}")
    return host, int(port) if port else 22


def ssh_target_for(
    node_name: str,
    node_obj: dict[str, Any] | None,
    *,
    user: str,
    key_path: str,
    known_hosts: str,
    overrides: Mapping[str, str],
) -> SshTarget:
    """Where to SSH for ``node_name``: an override "host:port", else the node's InternalIP:22.

    Raises NodeProbeError only for an override that is not "host[:port]" (a configuration error).
    """
    if node_name in overrides:
        try:
            host, port = _split_host_port(overrides[node_name])
        except ValueError:
            raise NodeProbeError(node_name, "error", f"bad ssh target {overrides[node_name]!r}") from None
        return SshTarget(node_name, host, port, user, key_path, known_hosts)
    addresses = ((node_obj or {}).get("status") or {}).get("addresses") or []
    by_type: dict[str, str] = {}
    for entry in addresses:
        if isinstance(entry, dict) and entry.get("type") and entry.get("address"):
            by_type.setdefault(str(entry["type"]), str(entry["address"]))
    # no InternalIP (rare: some bare-metal setups): the Hostname address, then the node name,
    # which resolve on most clusters; if they do not, the connection fails for this node only
    host = by_type.get("InternalIP") or by_type.get("Hostname") or node_name
    return SshTarget(node_name, host, 22, user, key_path, known_hosts)
