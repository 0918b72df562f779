"""Commands that read no cluster load neither the Kubernetes client nor asyncssh.

``gpubot runbook`` and ``help`` load every runbook and cross-check it against every built-in
check, so an import of the probes' transports from a check module (or from what the checks read)
made them pay the Kubernetes client's and asyncssh's start-up (0.8 s against 0.24 s).

``gpubot --version`` and a command's ``--help`` read nothing at all: no client, no YAML, no
Slack, no metrics. ``bot`` puts the official client's eager packages in ``sys.modules`` as lazy
stand-ins (``bot.kube_import``), so "kubernetes" is always there: what must be absent is the
client's machinery (``api_client``, its HTTP stack, its kubeconfig loader, its models).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: what a command without a cluster must never import (the official client's pieces, not the
#: lazy ``kubernetes`` package stand-ins that ``bot`` installs)
HEAVY = (
    "kubernetes.client.api_client",
    "kubernetes.client.models.v1_pod",
    "kubernetes.config",
    "kubernetes.dynamic",
    "kubernetes.stream",
    "urllib3",
    "asyncssh",
    "aiohttp",
    "slack_bolt",
    "slack_sdk",
    "prometheus_client",
    "pydantic",
)
#: what reads no file at all must not import either: PyYAML and its libyaml loader
NO_FILES = (*HEAVY, "yaml", "_yaml", "yaml._yaml")


def _loaded_after(argv: list[str], watched: tuple[str, ...]) -> tuple[int, list[str]]:
    """Run ``gpubot ARGV`` through the console script's own entry (``bot.cli.run``, which ends the
    process with ``os._exit`` after the ``atexit`` handlers) in a fresh interpreter; its exit
    status and which ``watched`` modules it imported, as an ``atexit`` handler saw them."""
    script = (
        "import atexit, contextlib, io, json, sys\n"
        f"sys.argv = ['gpubot', *{argv!r}]\n"
        "def report():\n"
        f"    sys.__stdout__.write(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)) + '\\n')\n"
        "    sys.__stdout__.flush()\n"
        "atexit.register(report)\n"
        "from bot.cli import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    run()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60, check=False
    )
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [["--version"], ["why-pending", "--help"], ["node-status", "--help"]])
def test_version_and_help_import_no_client_no_yaml(argv: list[str]) -> None:
    code, loaded = _loaded_after(argv, NO_FILES)
    assert (code, loaded) == (0, [])


@pytest.mark.parametrize("argv", [["runbook"], ["runbook", "guide-checkpoint-zombie"], ["help"], ["--help"]])
def test_a_command_without_a_cluster_imports_no_transport(argv: list[str]) -> None:
    script = (
        "import contextlib, io, json, sys\n"
        "from bot.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        code = main({argv!r})\n"
        "    except SystemExit as exc:\n"
        "        code = exc.code\n"
        f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    code, loaded = json.loads(proc.stdout.splitlines()[-1])
    assert code in (0, None) and loaded == []
