"""A ``gpubot serve`` whose HTTP port is taken says so in one line and exits 2 (a setting to fix),
not "internal error (OSError)": seen when a second replica was started on a port in use."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import yaml

from bot.exit_codes import ExitCode
from tests.replicas.rig import ROOT, replica_rig


async def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    async with replica_rig(tmp_path, replicas=1) as rig:
        busy = rig.replicas[0].port
        path = tmp_path / "second.yaml"
        values = {**rig.config, "http_port": busy, "state_path": str(tmp_path / "second.db")}
        path.write_text(yaml.safe_dump(values), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
        env.update({"GPUBOT_CONFIG": str(path), "PYTHONPATH": str(ROOT)})
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        assert rig.replicas[0].alive(), "the replica holding the port is untouched"
    said = [line for line in err.decode().splitlines() if line.startswith("gpubot:")]
    assert proc.returncode == ExitCode.CONFIG, (proc.returncode, err.decode()[-2000:])
    assert len(said) == 1 and f"cannot listen on 127.0.0.1:{busy}" in said[0], said
    assert "Traceback" not in err.decode() + out.decode()
