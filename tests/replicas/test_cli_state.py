"""``gpubot act`` and ``gpubot audit`` from a terminal with ``state: kubernetes``: the run takes the
replicas' shared store and lands in the shared audit trail, where the bot's replicas (and
``kubectl get gpuauditrecords``) see it; the state file is not used at all."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import yaml

from tests.actions.conftest import ZOMBIE_NODE
from tests.replicas.rig import ROOT, replica_rig


async def _cli(config: Path, *argv: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
    env.update({"GPUBOT_CONFIG": str(config), "PYTHONPATH": str(ROOT)})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *argv,
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode()


async def test_a_terminal_action_is_audited_in_the_shared_trail(tmp_path: Path) -> None:
    async with replica_rig(tmp_path, replicas=0) as rig:
        config = tmp_path / "cli.yaml"
        config.write_text(yaml.safe_dump({**rig.config, "state_path": str(tmp_path / "unused.db")}), "utf-8")
        code, out = await _cli(config, "act", "checkpoint.clear", "--node", ZOMBIE_NODE, "--yes")
        assert code == 0 and "succeeded" in out, out
        code, out = await _cli(config, "audit", "--json")
        assert code == 0, out
        entries = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert [e["event"] for e in entries][:3] == ["offer", "approve", "start"], out
        assert entries[-1]["event"] == "result" and entries[-1]["outcome"] == "ok"
        shared = await rig.io(rig.audit.query, None, 1000)
        assert [e.event for e in shared] == [e["event"] for e in entries]
        assert not (tmp_path / "unused.db").exists(), "state: kubernetes must not touch the state file"
