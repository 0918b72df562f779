"""The long-running bot's SSH pool: one connection per node across questions, replaced when stale."""

from __future__ import annotations

from pathlib import Path

from bot.commands import parse_invocation
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]


async def test_questions_reuse_one_connection_per_node(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(ROOT / "scenarios" / "zombie-checkpoint.yaml"), workdir=tmp_path) as sim:
        service = Service(sim.settings(), keep_connections=True)
        try:
            inv = parse_invocation(["node-status"])
            first = await service.run(inv)
            second = await service.run(inv)
            assert service.ssh_pool is not None
            assert service.ssh_pool.opened == 2  # two nodes, asked twice
            assert len(service.ssh_pool) == 2 and all(service.ssh_pool.holds(t) for t in service.ssh_pool._conns)
            assert "CHECKPOINT_ZOMBIE" in first.codes() and first.codes() == second.codes()
            # a node whose sshd dropped the kept connection is reconnected once, transparently
            for conn in list(sim.ssh._connections):
                conn.close()
            third = await service.run(inv)
            assert "NODE_UNREACHABLE" not in third.codes()
            assert service.ssh_pool.opened == 4
        finally:
            await service.close()
        assert service.ssh_pool is not None and len(service.ssh_pool) == 0
        assert all(r.allowed for r in sim.ssh.command_log)


async def test_one_shot_service_keeps_nothing(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(ROOT / "scenarios" / "tce-qgpu-healthy.yaml"), workdir=tmp_path) as sim:
        service = Service(sim.settings())
        try:
            await service.run(parse_invocation(["node-status"]))
            assert service.ssh_pool is None
        finally:
            await service.close()
