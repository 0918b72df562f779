"""A whole simulated cluster: the Kubernetes API server plus one SSH server per node.

Used by ``gpubot sim``, by ``--scenario`` on every diagnostic command, by the tests and by the
benchmarks. ``settings()`` returns gpubot settings that point at it (kubeconfig, SSH targets,
client key, known_hosts), so the bot talks to it exactly as it would to a real cluster.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from bot.settings import ClusterConfig, Settings, load_settings
from bot.sim.agents import actuator_objects, agent_objects, release_namespace
from bot.sim.kube_api import KubeApiServer
from bot.sim.kubeconfig import write_kubeconfig
from bot.sim.scenario import Scenario, load_scenario
from bot.sim.ssh_server import SshFleet


class SimCluster:
    """Start with ``async with SimCluster(scenario) as sim``; stop on exit."""

    def __init__(
        self, scenario: Scenario, *, workdir: Path | None = None, cluster_name: str = "sim", remediation: bool = False
    ) -> None:
        self.scenario = scenario
        self._own_dir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="gpubot-sim-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cluster_name = cluster_name
        # the gpubot-node agent pods come with the cluster, as the chart installs them; the
        # gpubot-actuator pods only with the remediation component (``remediation``)
        extra = agent_objects(scenario) + actuator_objects(scenario, remediation=remediation)
        extra += release_namespace(scenario, extra)
        self.api = KubeApiServer(scenario, extra_objects=extra)
        self.ssh = SshFleet(scenario, self.workdir / "ssh")
        # exec into a node's agent pod reads the same live node state as SSH to it, and exec into
        # its actuator changes it as SSH would
        self.api.node_read = self.ssh.read
        self.api.node_write = self.ssh.actuate
        # a kubelet stopped or started over SSH shows in the API as a real one would (Lease, Ready)
        self.ssh.on_kubelet = self.api.lifecycle.kubelet_changed
        self.kubeconfig_path = self.workdir / "kubeconfig"

    @classmethod
    def from_file(cls, path: str | Path, *, workdir: Path | None = None, remediation: bool = False) -> SimCluster:
        return cls(load_scenario(path), workdir=workdir, remediation=remediation)

    async def start(self) -> None:
        await self.api.start()
        try:
            await self.ssh.start()
        except BaseException:
            await self.api.stop()
            raise
        write_kubeconfig(self.kubeconfig_path, self.api.url, context=self.cluster_name)

    async def stop(self) -> None:
        try:
            await self.ssh.stop()
        finally:
            await self.api.stop()
            if self._own_dir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    async def __aenter__(self) -> SimCluster:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def cluster_config(self) -> ClusterConfig:
        return ClusterConfig(
            name=self.cluster_name,
            kubeconfig=str(self.kubeconfig_path),
            context=self.cluster_name,
            ssh_targets={node: f"{host}:{port}" for node, (host, port) in self.ssh.targets.items()},
            ssh_known_hosts=str(self.ssh.known_hosts_path),
            ssh_key_path=str(self.ssh.client_key_path),
        )

    def settings(self, **overrides: Any) -> Settings:
        """gpubot settings aimed at this simulator; ``overrides`` set any other field.

        Node reads go over SSH unless ``node_access`` is given: the simulator offers both the SSH
        servers and the agent pods, and a test that means a transport (or ``auto``) says which."""
        values: dict[str, Any] = {
            "clusters": (self.cluster_config(),),
            "ssh_user": self.ssh.user,
            "state_path": str(self.workdir / "state.db"),
            "node_access": "ssh",
        }
        values.update(overrides)
        return load_settings(env={}, **values)

    def describe(self) -> str:
        """What ``gpubot sim`` prints: kubeconfig, SSH per node, a kubectl line."""
        lines = [
            f"scenario: {self.scenario.name} — {self.scenario.summary}",
            f"kubernetes API: {self.api.url}",
            f"kubeconfig: {self.kubeconfig_path}",
            f"try: kubectl --kubeconfig {self.kubeconfig_path} get nodes,pods -A",
            # node_access auto (the default) finds the simulated gpubot-node agents: no SSH setup
            f"diagnose: KUBECONFIG={self.kubeconfig_path} gpubot node-status --node-access auto",
            "ssh nodes (for --node-access ssh, set ssh_key_path and ssh_known_hosts to the files below):",
        ]
        for node, (host, port) in sorted(self.ssh.targets.items()):
            mode = self.scenario.nodes[node].ssh if node in self.scenario.nodes else "ok"
            lines.append(
                f"  {node}: ssh -p {port} -i {self.ssh.client_key_path} "
                f"-o UserKnownHostsFile={self.ssh.known_hosts_path} -o StrictHostKeyChecking=yes "
                f"{self.ssh.user}@{host}   [{mode}]"
            )
        return "\n".join(lines)
