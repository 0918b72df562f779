"""Parsing what the allow-listed container commands print (exec.container_facts)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.engine.checks._container import human_delta, version_tuple
from bot.probes.container import (
    ExecOutput,
    TorchInfo,
    build_view,
    containers_to_examine,
    parse_env,
    parse_torch,
)

LS = (
    "crw-rw-rw- 1 root root 195,   0 2026-05-09 03:15:27.000000000 +0000 /dev/nvidia0\n"
    "crw-rw-rw- 1 root root 195, 255 2026-05-07 09:41:29.000000000 +0000 /dev/nvidiactl\n"
)


def test_torch_line_with_a_cpu_build() -> None:
    assert parse_torch("2.1.0+cpu None False 0\n") == TorchInfo("2.1.0+cpu", None, False, 0)
    noisy = "UserWarning: CUDA initialization: driver too old\n  warnings.warn(\n2.1.0+cu121 12.1 False 0\n"
    assert parse_torch(noisy) == TorchInfo("2.1.0+cu121", "12.1", False, 0)
    assert parse_torch("Traceback ...\nModuleNotFoundError: No module named 'torch'") is None


def test_env_keeps_only_gpu_variables() -> None:
    text = "PATH=/bin\nNVIDIA_VISIBLE_DEVICES=GPU-1\nqgpu_core=20\nAPI_TOKEN=secret\nCUDA_HOME=/usr/local/cuda\n"
    env = parse_env(text)
    assert env == {"NVIDIA_VISIBLE_DEVICES": "GPU-1", "qgpu_core": "20", "CUDA_HOME": "/usr/local/cuda"}


def test_view_from_outputs() -> None:
    outputs = {
        "nvidia_smi": ExecOutput("Failed to initialize NVML: Unknown Error\n", "", 255),
        "dev_nvidia": ExecOutput(LS, "", 0),
        "driver_version": ExecOutput("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  Thu Nov 14\n"),
        "pid1": ExecOutput("bash\n"),
        "torch": ExecOutput("", "sh: 1: python: not found\n", 127),
        "env": ExecOutput(error="exec refused"),
    }
    view = build_view("app", {"nvidia.com/gpu": 1.0}, outputs)
    assert [d.name for d in view.devices] == ["nvidia0", "nvidiactl"]
    assert view.driver_version == "535.216.03" and view.pid1 == "bash"
    assert view.torch is None and view.torch_problem == "no python in the image"
    assert view.gpu_env == {} and view.reachable


def test_containers_to_examine_prefers_gpu_containers() -> None:
    pod = {"spec": {"containers": [
        {"name": "sidecar", "resources": {"limits": {"cpu": "1"}}},
        {"name": "train", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
    ]}}
    assert containers_to_examine(pod) == [("train", {"nvidia.com/gpu": 1.0})]
    plain = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    assert [n for n, _ in containers_to_examine(plain)] == ["a", "b"]


def test_versions_compare_numerically() -> None:
    assert version_tuple("12.10") > version_tuple("12.9")  # type: ignore[operator]
    assert version_tuple("11.4") < version_tuple("12.1")  # type: ignore[operator]
    assert version_tuple("None") is None and version_tuple("") is None


@given(st.text(max_size=400))
def test_odd_output_never_crashes(text: str) -> None:
    parse_torch(text)
    parse_env(text)
    outputs = {n: ExecOutput(text, text, 1) for n in ("nvidia_smi", "dev_nvidia", "driver_version", "pid1", "torch")}
    build_view("c", {}, outputs)


def test_human_delta() -> None:
    from datetime import timedelta

    assert human_delta(timedelta(days=1, hours=17, minutes=33, seconds=58)) == "1d 17h 33m"
    assert human_delta(timedelta(seconds=2)) == "0m 2s"
