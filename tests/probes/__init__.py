"""Tests of the read-only probes; also holds scenario builders shared with the simulator tests.

The builders make scenarios in code through ``scenario_from_dict`` (the same loader as the
files), so a test states only what differs from a healthy node.
"""

from __future__ import annotations

from typing import Any

from bot.probes.ssh import SshTarget
from bot.sim.scenario import Scenario, scenario_from_dict
from bot.sim.ssh_server import SshFleet

CHECKPOINT_TEMPLATE = (
    '{"Data":{"PodDeviceEntries":[{"PodUID":"pod-%(i)d","ContainerName":"main",'
    '"ResourceName":"nvidia.com/gpu","DeviceIDs":{"0":["%(uuid)s"]},"AllocResp":""}],'
    '"RegisteredDevices":{"nvidia.com/gpu":["%(uuid)s"]}},"Checksum":12345}\n'
)


def gpu_uuid(i: int, card: int = 0) -> str:
    return f"GPU-{i:08x}-0000-4000-8000-{card:012x}"


def node_dict(i: int, **overrides: Any) -> dict[str, Any]:
    """A healthy one-card node whose numbers depend on ``i`` (so mix-ups show)."""
    uuid = gpu_uuid(i)
    facts: dict[str, Any] = {
        "address": f"10.0.{i // 250}.{i % 250 + 1}",
        "ssh": "ok",
        "kubelet": "active",
        "driver": "535.216.03",
        "cuda": "12.2",
        "gpus": [
            {
                "index": 0,
                "uuid": uuid,
                "name": "Tesla V100-SXM2-32GB",
                "utilization_gpu": i % 100,
                "memory_used_mib": 100 + i,
                "memory_total_mib": 32768,
                "temperature_c": 30 + i % 50,
                "power_w": 30.25 + i,
            }
        ],
        "processes": [{"pid": 1000 + i, "name": "python", "gpu_uuid": uuid, "used_memory_mib": 100 + i}],
        "checkpoint": CHECKPOINT_TEMPLATE % {"i": i, "uuid": uuid},
        "dev_nvidia": [
            {"name": "nvidia0", "mtime": "2026-05-07T10:02:11Z"},
            {"name": "nvidiactl", "mtime": "2026-05-07T10:02:11Z"},
            {"name": "nvidia-uvm", "mtime": "2026-05-07T10:02:14Z"},
        ],
    }
    facts.update(overrides)
    return facts


def scenario_of(nodes: dict[str, dict[str, Any]], name: str = "test-fleet") -> Scenario:
    return scenario_from_dict(
        {"scenario": name, "kubernetes": {"version": "v1.28.0", "objects": []}, "nodes": nodes}
    )


def many_nodes(n: int, special: dict[int, dict[str, Any]] | None = None) -> Scenario:
    """``n`` healthy nodes named node-000…; ``special`` maps an index to overrides."""
    special = special or {}
    return scenario_of({f"node-{i:03d}": node_dict(i, **special.get(i, {})) for i in range(n)})


def targets_of(fleet: SshFleet) -> dict[str, SshTarget]:
    """The strict client's view of every node of a started fleet."""
    return {
        node: SshTarget(node, host, port, fleet.user, str(fleet.client_key_path), str(fleet.known_hosts_path))
        for node, (host, port) in fleet.targets.items()
    }
