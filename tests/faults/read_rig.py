"""A rig for read failures: the simulator behind the kubeconfigs a broken cluster presents.

The simulator injects HTTP-level faults itself (``status``, ``delay_s``, ``hang``); what it cannot
be is absent or the wrong protocol. Those come from the kubeconfig, as in production: a server
URL whose port nothing listens on (connection refused), and ``https://`` in front of the
simulator's plain HTTP (a TLS handshake that fails). Nothing here reaches product code: the
bot reads these kubeconfigs like any other.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.sim.cluster import SimCluster
from bot.sim.kubeconfig import write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]


#: sockets bound and never listening, held for the whole test process: a port let go at once
#: could be taken by another worker's server (or an outgoing connection) before the test
#: connects, and the answer was "connection closed" instead of "connection refused"
_HELD: list[socket.socket] = []


def refused_url() -> str:
    """An http:// URL on 127.0.0.1 where nothing listens: the port is bound and kept, never
    listened on, so a connection to it is refused."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    _HELD.append(s)
    return f"http://127.0.0.1:{s.getsockname()[1]}"


def tls_url(sim: SimCluster) -> str:
    """The simulator's own address with https://: its plain HTTP answer fails the TLS handshake."""
    return sim.api.url.replace("http://", "https://", 1)


@dataclass
class ReadRig:
    """One running simulator and gpubot settings files aimed at it (or at a broken address)."""

    sim: SimCluster
    workdir: Path

    def config(
        self, name: str = "gpubot", *, server: str = "", credential_plugin: list[str] | None = None, **settings: Any
    ) -> Path:
        """A settings file for the simulator; with ``server``, its kubeconfig points there instead;
        with ``credential_plugin`` (argv), the user's token comes from that exec plugin."""
        cluster = self.sim.cluster_config()
        kubeconfig = cluster.kubeconfig
        if server or credential_plugin:
            path = write_kubeconfig(self.workdir / f"{name}.kubeconfig", server or self.sim.api.url,
                                    context=cluster.context)
            if credential_plugin:
                doc = yaml.safe_load(path.read_text(encoding="utf-8"))
                doc["users"][0]["user"] = {"exec": {
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "command": credential_plugin[0],
                    "args": credential_plugin[1:],
                    "interactiveMode": "Never",
                }}
                path.write_text(yaml.safe_dump(doc), encoding="utf-8")
            kubeconfig = str(path)
        data = {
            "clusters": [
                {
                    "name": cluster.name,
                    "kubeconfig": kubeconfig,
                    "context": cluster.context,
                    "ssh_targets": dict(cluster.ssh_targets),
                    "ssh_known_hosts": cluster.ssh_known_hosts,
                    "ssh_key_path": cluster.ssh_key_path,
                }
            ],
            "ssh_user": self.sim.ssh.user,
            "state_path": str(self.workdir / "state.db"),
            **settings,
        }
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return path


@dataclass
class Answer:
    """What one gpubot command printed, and its exit status."""

    status: int
    out: str
    err: str

    @property
    def report(self) -> dict[str, Any]:
        return dict(json.loads(self.out))

    @property
    def verdict(self) -> str:
        """The text view's verdict: the paragraph after the header lines."""
        lines = self.out.splitlines()
        start = next(i for i, line in enumerate(lines) if i > 2 and line.strip())
        end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
        return " ".join(line.strip() for line in lines[start:end])


def gpubot(config: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> Answer:
    """``gpubot --config CONFIG ARGV…`` in this process, as the CLI runs it."""
    status = main(["--config", str(config), *argv])
    out, err = capsys.readouterr()
    return Answer(status, out, err)


def gpubot_process(config: Path, argv: list[str], *, env: dict[str, str], guard_s: float) -> tuple[Answer, float]:
    """The real ``gpubot`` process; (its answer, seconds from spawn to exit). ``guard_s`` only
    stops a hung process from hanging the suite."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--config", str(config), *argv],
        capture_output=True,
        text=True,
        timeout=guard_s,
        cwd=ROOT,
        env=env,
    )
    return Answer(proc.returncode, proc.stdout, proc.stderr), time.monotonic() - started


def start_cost_s() -> float:
    """Seconds this machine takes now to start a Python process that imports gpubot's client
    side: the part of a command's deadline (counted from the process's start) spent before it
    can ask anything. Tests that need reads to finish within a deadline size it from this."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import bot.cli, bot.oneshot, bot.service"], cwd=ROOT, check=True,
                   timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.monotonic() - started
