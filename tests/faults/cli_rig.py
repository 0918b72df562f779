"""Real ``gpubot act`` / ``gpubot audit`` processes against one simulator, killed where a test says.

Issue 29 (F1, F2): a terminal run killed mid-action must not leave its node broken, and two
terminals with different state files must not act on one node at once. The tests run the real
CLI as a subprocess (``python -m bot.cli``) against a ``SimCluster`` the test owns, with its own
settings file per run (transport, state backend, state file), watch the run's trail in its state
(the SQLite file, or the shared trail on the API) and kill it when the step they want has been
recorded as starting: the kill point is chosen by the journal, never by sleeping. This module
wires, waits and reads; it asserts nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from kubernetes import config as kube_config

from bot.sim.cluster import SimCluster
from bot.state.contracts import AuditLog, PendingStore
from bot.state.kube import KubeState
from bot.state.kube_actions import KubePendingStore
from bot.state.kube_audit import KubeAuditLog
from bot.state.kube_locks import NodeActionLeases, action_lease_name
from bot.state.opening import open_sqlite
from bot.state.records import AuditEntry, PendingAction
from bot.state.timestamps import parse_ts

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "gpubot"
#: seconds a run's lock (and its record's heartbeat) lasts without renewal: short, so a test
#: waits little for a dead run to count as abandoned, yet long enough that ten live runs on a
#: loaded 2-core machine still renew in time
LEASE_S = 3.0


@dataclass
class CliRun:
    """One configuration of the CLI: transport, state backend, state file."""

    sim: SimCluster
    workdir: Path
    node_access: str
    state: str
    name: str

    @property
    def state_path(self) -> Path:
        return self.workdir / f"{self.name}.db"

    @property
    def config(self) -> Path:
        return self.workdir / f"{self.name}.yaml"

    def write(self, **extra: Any) -> CliRun:
        cluster = {k: v for k, v in asdict(self.sim.cluster_config()).items() if v not in ("", {}, False)}
        values: dict[str, Any] = {
            "clusters": [cluster],
            "ssh_user": self.sim.ssh.user,
            "state": self.state,
            "state_path": str(self.state_path),
            "namespace": NAMESPACE,
            "node_access": self.node_access,
            "action_lease_s": LEASE_S,
            "node_ready_timeout_s": 10.0,
            "cache_enabled": False,
            **extra,
        }
        self.config.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
        return self

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
        env.update(
            {
                "GPUBOT_CONFIG": str(self.config),
                "PYTHONPATH": str(ROOT),
                "PYTHONUNBUFFERED": "1",
                "XDG_STATE_HOME": str(self.workdir / "xdg"),
            }
        )
        return env

    async def start(self, *argv: str, stdin: int = asyncio.subprocess.DEVNULL) -> asyncio.subprocess.Process:
        """The CLI as a subprocess; ``stdin=PIPE`` to type a confirmation into it."""
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", *argv, env=self.env(), cwd=ROOT,
            stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )

    async def run(self, *argv: str, timeout: float = 90.0) -> tuple[int, str]:
        proc = await self.start(*argv)
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        return proc.returncode if proc.returncode is not None else -1, out.decode()

    def shared(self) -> tuple[PendingStore, AuditLog]:
        """The run's state as the CLI sees it (blocking calls: use ``asyncio.to_thread``)."""
        if self.state == "kubernetes":
            kube = KubeState(kube_config.new_client_from_config(config_file=str(self.sim.kubeconfig_path)), NAMESPACE)
            return KubePendingStore(kube), KubeAuditLog(kube)
        return open_sqlite(self.state_path).actions()


async def until(predicate: Callable[[], Any], *, timeout: float = 60.0, every: float = 0.02) -> Any:
    """Await ``predicate()`` (sync or async) until truthy; bounded."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s")
        await asyncio.sleep(every)


async def trail(audit: AuditLog, action_id: str | None = None) -> list[AuditEntry]:
    return await asyncio.to_thread(lambda: audit.query(None, 100000, action_id=action_id))


@dataclass
class Kill:
    """One run to kill: ``gpubot act ACTION --node NODE --yes``, once ``step`` is starting."""

    action: str
    node: str
    step: str
    sig: signal.Signals = signal.SIGKILL
    proc: asyncio.subprocess.Process | None = None
    action_id: str = ""
    out: str = ""


async def kill_all(run: CliRun, audit: AuditLog, kills: list[Kill], *, known: set[str] | None = None) -> None:
    """Start every run at once; send each its signal when its trail says its step is starting
    (read from the run's state, one poll for all), then collect what each printed."""
    known = known or set()
    for kill in kills:
        kill.proc = await run.start("act", kill.action, "--node", kill.node, "--yes")
    waiting = list(kills)

    async def all_killed() -> bool:
        entries = await trail(audit)
        for kill in list(waiting):
            assert kill.proc is not None
            if kill.proc.returncode is not None:
                out = (await kill.proc.communicate())[0].decode()
                raise AssertionError(f"gpubot act on {kill.node} ended before '{kill.step}': {out}")
            for e in entries:
                if (
                    e.action_id not in known and e.target == f"node/{kill.node}" and e.event == "step"
                    and e.outcome == "starting" and kill.step in str(e.detail.get("step"))
                ):
                    kill.proc.send_signal(kill.sig)
                    kill.action_id = e.action_id
                    waiting.remove(kill)
                    break
        return not waiting

    try:
        await until(all_killed, timeout=120)
    finally:
        for kill in waiting:
            if kill.proc is not None and kill.proc.returncode is None:
                kill.proc.kill()
    for kill in kills:
        assert kill.proc is not None
        kill.out = (await asyncio.wait_for(kill.proc.communicate(), 60))[0].decode()


async def read_until(proc: asyncio.subprocess.Process, text: str, *, timeout: float = 60.0) -> str:
    """What ``proc`` printed up to and including ``text`` (a prompt has no newline); bounded."""
    assert proc.stdout is not None
    seen = b""
    async with asyncio.timeout(timeout):
        while text.encode() not in seen:
            chunk = await proc.stdout.read(4096)
            if not chunk:
                raise AssertionError(f"the CLI ended before printing {text!r}: {seen.decode()}")
            seen += chunk
    return seen.decode()


@contextlib.asynccontextmanager
async def held_for_its_holder(sim: SimCluster, node: str) -> AsyncIterator[None]:
    """Renew ``node``'s action Lease in its current holder's name while the block runs, as that
    holder would if it still lived: a dead run's lock stays live exactly as long as a test needs."""
    lease = sim.api.store.find("Lease", action_lease_name(node), NAMESPACE)
    holder = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
    assert holder, f"nobody holds the action Lease of {node}"
    kube = KubeState(kube_config.new_client_from_config(config_file=str(sim.kubeconfig_path)), NAMESPACE)
    leases = NodeActionLeases(kube, LEASE_S)
    stop = asyncio.Event()

    async def renew() -> None:
        while not stop.is_set():
            await asyncio.to_thread(leases.renew, node, holder)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), LEASE_S / 6)

    await asyncio.to_thread(leases.renew, node, holder)
    task = asyncio.create_task(renew())
    try:
        yield
    finally:
        stop.set()
        await task


def lease_left_s(sim: SimCluster, node: str) -> float:
    """Seconds the node's action Lease is still held for (0: free or run out), by the simulator's clock."""
    lease = sim.api.store.find("Lease", action_lease_name(node), NAMESPACE)
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity") or not spec.get("renewTime"):
        return 0.0
    ends = parse_ts(spec["renewTime"]) + timedelta(seconds=float(spec.get("leaseDurationSeconds") or 0))
    return max(0.0, (ends - datetime.now(UTC)).total_seconds())


async def lease_run_out(sim: SimCluster, nodes: list[str]) -> None:
    """Wait until the dead holders' Leases have run out, and a second more: the API server's
    clock (its ``Date``) has whole seconds, and the records' heartbeats run out with them."""
    await until(lambda: all(lease_left_s(sim, n) == 0.0 for n in nodes), timeout=30, every=0.05)
    await asyncio.sleep(LEASE_S + 1.05)


def running(store: PendingStore) -> list[PendingAction]:
    return store.list(states=["running"], limit=1000)
