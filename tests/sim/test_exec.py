"""pods/exec over WebSocket answers from the scenario's container facts, via the official client."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kubernetes.stream import stream

from tests.sim.conftest import SimKube

DEMO = ("gpu-demo-6c9f7d-tx2lq", "ai")
VISIBLE = "GPU-5e1c0a3e-0000-4000-8000-000000000001"


def run(
    sim: SimKube, argv: list[str], pod: str = DEMO[0], ns: str = DEMO[1], **kwargs
) -> tuple[str, str, int]:
    resp = stream(
        sim.core.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=argv,
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
        _preload_content=False,
        **kwargs,
    )
    resp.run_forever(timeout=10)
    out, err = resp.read_stdout(), resp.read_stderr()
    code = resp.returncode
    resp.close()
    return out, err, code


@pytest.fixture
def healthy(start_kube: Callable[..., SimKube]) -> SimKube:
    return start_kube("tce-qgpu-healthy")


def test_nvml_unknown_error_exits_255(kube: SimKube) -> None:
    out, err, code = run(kube, ["nvidia-smi"])
    assert (out, err, code) == ("Failed to initialize NVML: Unknown Error\n", "", 255)
    assert kube.server.exec_log == [("ai", DEMO[0], "torch", ("nvidia-smi",), 255)]


def test_nvidia_smi_sees_only_visible_gpus(healthy: SimKube) -> None:
    out, _err, code = run(healthy, ["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"])
    assert (out.split(), code) == ([VISIBLE], 0)


def test_torch_dev_nodes_driver_and_pid1(kube: SimKube) -> None:
    assert run(kube, ["python3", "-c", "import torch; print(torch.__version__)"]) == (
        "1.9.0+cu102 10.2 True 1\n",
        "",
        0,
    )
    out, _err, code = run(kube, ["sh", "-c", "ls -l --time-style=full-iso /dev/nvidia*"])
    assert code == 0
    assert (
        "crw-rw-rw- 1 root root 195,   0 2026-05-09 03:15:27.000000000 +0000 /dev/nvidia0" in out.splitlines()
    )
    version = run(kube, ["cat", "/proc/driver/nvidia/version"])[0]
    assert version.startswith("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  ")
    assert version.splitlines()[1].startswith("GCC version:")
    assert run(kube, ["cat", "/proc/1/comm"]) == ("sleep\n", "", 0)
    env = run(kube, ["env"])[0].splitlines()
    assert f"NVIDIA_VISIBLE_DEVICES={VISIBLE}" in env and f"HOSTNAME={DEMO[0]}" in env


def test_defaults_without_container_facts(kube: SimKube) -> None:
    pod = ("qgpu-manager-7xk2p", "qgpu")
    out, err, code = run(kube, ["python", "-c", "import torch"], *pod)
    assert (code, err.splitlines()[-1]) == (1, "ModuleNotFoundError: No module named 'torch'")
    out, _err, code = run(kube, ["sh", "-c", "ls -l --time-style=full-iso /dev/nvidia*"], *pod)
    assert code == 0 and out.splitlines()[-1].endswith(" 2026-04-20 02:05:01.000000000 +0000 /dev/nvidiactl")
    assert run(kube, ["cat", "/proc/1/comm"], *pod) == ("sleep\n", "", 0)


def test_unknown_command_is_127_and_logged(kube: SimKube) -> None:
    assert run(kube, ["rm", "-rf", "/"]) == ("", "sh: 1: rm: not found\n", 127)
    assert kube.server.exec_log[-1] == ("ai", DEMO[0], "torch", ("rm", "-rf", "/"), 127)
    assert kube.server.writes == []


def test_missing_pod_or_container_is_a_status(kube: SimKube) -> None:
    status, body = kube.raw_json("/api/v1/namespaces/ai/pods/nope/exec?command=ls&stdout=true")
    assert (status, body["reason"]) == (404, "NotFound")
    status, body = kube.raw_json(f"/api/v1/namespaces/ai/pods/{DEMO[0]}/exec?command=ls&container=nope")
    assert (status, body["kind"], body["reason"]) == (400, "Status", "BadRequest")
    assert "container nope is not valid" in body["message"]
    status, body = kube.raw_json(f"/api/v1/namespaces/ai/pods/{DEMO[0]}/exec?command=ls")
    assert status == 400 and "Upgrade" in json.dumps(body)
