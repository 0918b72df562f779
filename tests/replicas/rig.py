"""Several real ``gpubot serve`` processes against one simulated cluster and one recording Slack.

Each replica is a subprocess (``python -m bot.cli serve``) in HTTP mode with ``state:
kubernetes``: it shares nothing with the others but the simulator's API server (its own SQLite
file, as a pod without a volume would have). The test drives them with signed Slack requests,
reads the shared state through the same Kubernetes store the replicas use, and can kill one
with SIGKILL as a lost node would. This module wires and waits; it asserts nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from kubernetes import client, config

from bot.remediation.flow import ConfirmFlow
from bot.remediation.policy import ApproverPolicy
from bot.sim.cluster import SimCluster
from bot.sim.store import resource_for
from bot.state.kube import KubeState
from bot.state.kube_actions import KubePendingStore
from bot.state.kube_audit import KubeAuditLog
from bot.state.records import AuditEntry
from tests.actions.conftest import APPROVER, REQUESTER, scenario
from tests.replicas.conftest import NAMESPACE, namespace_object
from tests.slack.helpers import BOT_TOKEN, SIGNING_SECRET, click_payload, interaction_form, sign
from tests.slack.mock_slack_api import MockSlackApi

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Replica:
    """One ``gpubot serve`` process."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    #: how many times it was started again because its port was taken first
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class ReplicaRig:
    sim: SimCluster
    mock: MockSlackApi
    replicas: list[Replica]
    #: the shared state as any replica sees it (blocking calls: use ``io``)
    kube: KubeState
    store: KubePendingStore
    audit: KubeAuditLog
    flow: ConfirmFlow
    workdir: Path
    config: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    async def io(fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A blocking store call off this loop (the simulator serves on it)."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def offer(self, action: str, params: dict[str, str]) -> str:
        """An offer recorded as any replica records it; its id is what the button carries."""
        record = await self.io(self.flow.offer, action, params, self.sim.cluster_name, REQUESTER, "C0GPU")
        return str(record.id)

    async def clicks(
        self, offer_id: str, n: int, *, user: str = APPROVER, session: aiohttp.ClientSession | None = None
    ) -> None:
        """``n`` distinct signed clicks on one button, spread round-robin over the live replicas.

        ``session``: one the caller keeps across rounds, so its connections are reused as Slack
        reuses its own (a new session opens ``n`` connections every round)."""
        live = [r for r in self.replicas if r.alive()]
        bodies = [interaction_form(click_payload(self.mock, offer_id, user=user)) for _ in range(n)]
        async with contextlib.AsyncExitStack() as stack:
            client = session or await stack.enter_async_context(aiohttp.ClientSession())

            async def send(i: int, body: str) -> int:
                url = live[i % len(live)].url + "/slack/events"
                async with client.post(url, data=body, headers=sign(body)) as resp:
                    await resp.read()
                    return resp.status

            statuses = await asyncio.gather(*(send(i, b) for i, b in enumerate(bodies)))
        assert all(s == 200 for s in statuses), statuses

    async def trail(self, offer_id: str) -> list[AuditEntry]:
        entries: list[AuditEntry] = await self.io(self.audit.query, action_id=offer_id, limit=100000)
        return entries

    async def wait_for(self, predicate: Any, *, timeout: float = 60.0, every: float = 0.1) -> Any:
        """Await ``predicate()`` (a coroutine function) until it is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = await predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s; last value {value!r}")
            await asyncio.sleep(every)

    async def leader_identity(self) -> str:
        try:
            lease = await self.io(
                client.CoordinationV1Api(self.kube.api_client).read_namespaced_lease, "gpubot-leader", NAMESPACE
            )
        except client.exceptions.ApiException:
            return ""
        return str((lease.spec.holder_identity if lease.spec else None) or "")

    def replica_of(self, identity: str) -> Replica | None:
        """The replica whose process holds ``identity`` (``host:pid:random``)."""
        parts = identity.split(":")
        pid = int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else -1
        return next((r for r in self.replicas if r.proc.pid == pid), None)

    def start_replica(self, name: str) -> Replica:
        replica = self._spawn(name)
        self.replicas.append(replica)
        return replica

    def restart_on_another_port(self, replica: Replica) -> None:
        fresh = self._spawn(replica.name)
        replica.port, replica.proc, replica.starts = fresh.port, fresh.proc, replica.starts + 1

    def _spawn(self, name: str) -> Replica:
        port = free_port()
        values = {**self.config, "http_port": port, "state_path": str(self.workdir / f"{name}.db")}
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
        log = self.workdir / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
        env.update({"GPUBOT_CONFIG": str(path), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bot.cli", "serve"], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT
            )
        return Replica(name, port, proc, log)

    async def ready(self, replica: Replica, timeout: float = 90.0) -> None:
        async def up() -> bool:
            if not replica.alive():
                said = replica.log.read_text()
                if "cannot listen on" in said and replica.starts < 3:
                    # the free port was taken between free_port() and the bind (parallel tests)
                    self.restart_on_another_port(replica)
                    return False
                raise AssertionError(f"{replica.name} exited: {said[-3000:]}")
            try:
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(replica.url + "/readyz", timeout=aiohttp.ClientTimeout(total=2)) as resp,
                ):
                    return resp.status == 200
            except (aiohttp.ClientError, TimeoutError):
                return False

        await self.wait_for(up, timeout=timeout, every=0.2)

    def kill(self, replica: Replica) -> None:
        replica.proc.send_signal(signal.SIGKILL)
        replica.proc.wait(10)


def replica_config(sim: SimCluster, mock: MockSlackApi, **extra: Any) -> dict[str, Any]:
    """The YAML settings of every replica (``http_port`` and ``state_path`` are per replica)."""
    cluster = {k: v for k, v in asdict(sim.cluster_config()).items() if v not in ("", {}, False)}
    cluster["ssh_targets"] = dict(sim.cluster_config().ssh_targets)
    values: dict[str, Any] = {
        "slack_bot_token": BOT_TOKEN,
        "slack_signing_secret": SIGNING_SECRET,
        "slack_mode": "http",
        "slack_api_url": mock.api_url,
        "http_host": "127.0.0.1",
        "clusters": [cluster],
        "ssh_user": sim.ssh.user,
        "state": "kubernetes",
        "namespace": NAMESPACE,
        "approvers": {"*": [APPROVER]},
        "leader_lease_s": 3.0,
        "offer_sweep_interval_s": 1.0,
        "action_lease_s": 3.0,
        "node_ready_timeout_s": 10.0,
        "shutdown_grace_s": 5.0,
        "cache_enabled": False,
        "log_level": "INFO",
    }
    values.update(extra)
    return values


@asynccontextmanager
async def replica_rig(
    tmp_path: Path, *, replicas: int = 2, name: str = "zombie-checkpoint", **extra: Any
) -> AsyncIterator[ReplicaRig]:
    """The simulator (with the release namespace), the Slack mock and ``replicas`` bots, ready."""
    mock = await MockSlackApi().start()
    try:
        async with SimCluster.from_file(scenario(name), workdir=tmp_path / "sim") as sim:
            ns_type = resource_for("v1", "Namespace")
            assert ns_type is not None
            sim.api.store.put(ns_type, namespace_object())
            api = config.new_client_from_config(config_file=str(sim.kubeconfig_path))
            kube = KubeState(api, NAMESPACE)
            store, audit = KubePendingStore(kube), KubeAuditLog(kube)
            flow = ConfirmFlow(store, audit, ApproverPolicy({"*": (APPROVER,)}, False), ttl_s=900)
            rig = ReplicaRig(sim, mock, [], kube, store, audit, flow, tmp_path, replica_config(sim, mock, **extra))
            try:
                for n in range(replicas):
                    rig.start_replica(f"replica-{n}")
                for replica in rig.replicas:
                    await rig.ready(replica)
                yield rig
            finally:
                for replica in rig.replicas:
                    if replica.alive():
                        replica.proc.send_signal(signal.SIGTERM)
                for replica in rig.replicas:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        await asyncio.to_thread(replica.proc.wait, 20)
                    if replica.alive():
                        replica.proc.kill()
                api.close()
    finally:
        await mock.stop()
