"""The in-container checks (``verify``) on hand-built exec results."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.probes.container import ContainerView, ExecFacts, ExecOutput, TorchInfo
from bot.probes.devices import DevEntry
from bot.probes.observation import NodeObservation
from tests.facts import only, pod, run

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DEVICES = [DevEntry("nvidia0", T0, "crw-rw-rw-"), DevEntry("nvidiactl", T0, "crw-rw-rw-")]
SMI_OK = {"nvidia_smi": ExecOutput(stdout="| NVIDIA-SMI 550.54 | CUDA Version: 12.4 |")}
NVML = {"nvidia_smi": ExecOutput(stdout="Failed to initialize NVML: Unknown Error", exit_code=255)}


def view(name: str = "c", *, torch: TorchInfo | None = None, devices: list[DevEntry] | None = None,
         outputs: dict[str, ExecOutput] | None = None, pid1: str | None = "python",
         smi_cuda: str | None = "12.4") -> ContainerView:
    return ContainerView(name, {"nvidia.com/gpu": 1}, outputs=dict(SMI_OK if outputs is None else outputs),
                         devices=list(DEVICES if devices is None else devices), driver_version="550.54",
                         smi_cuda_version=smi_cuda, smi_driver_version="550.54", pid1=pid1, torch=torch)


def ex(*views: ContainerView) -> ExecFacts:
    return ExecFacts("ml", "p", "g1", containers=list(views))


GOOD_TORCH = TorchInfo("2.3.0", "12.1", True, 1)
RUNNING = pod(node="g1", phase="Running", ready=True)


# ------------------------------------------------------------------ container.chain


def test_chain_ok_with_torch_and_nvidia_smi() -> None:
    d = only("container.chain", command="verify", pod=RUNNING, containers=ex(view(torch=GOOD_TORCH)))
    assert d.code == "CONTAINER_GPU_OK" and d.params == {
        "pod": "ml/p", "container": "c", "what": "torch 2.3.0, CUDA 12.1, 1 device(s)"}


def test_chain_no_device_files_is_unavailable() -> None:
    d = only("container.chain", command="verify", pod=RUNNING, containers=ex(view(devices=[])))
    assert d.code == "CONTAINER_GPU_UNAVAILABLE" and "no /dev/nvidia*" in d.params["what"]


def test_chain_leaves_named_problems_to_their_checks_and_labels_several_containers() -> None:
    assert run("container.chain", command="verify", pod=RUNNING, containers=ex(view(outputs=NVML))) == []
    found = run("container.chain", command="verify", pod=RUNNING, containers=ex(view("a"), view("b")))
    assert [d.params["pod"] for d in found] == ["ml/p (a)", "ml/p (b)"]
    assert run("container.chain", command="verify", pod=RUNNING, containers=None) == []


# ------------------------------------------------------------------ container.nvml


def test_nvml_lost_with_device_files_present() -> None:
    d = only("container.nvml", command="verify", pod=RUNNING, containers=ex(view(outputs=NVML)))
    assert d.code == "NVML_CGROUP_LOST" and d.params["owned"] is False and d.params["pod_name"] == "p"


def test_nvml_owned_pod_and_nothing_when_nvidia_smi_works() -> None:
    owned = pod(node="g1", phase="Running", owners=[{"kind": "ReplicaSet", "name": "r", "controller": True}])
    assert only("container.nvml", command="verify", pod=owned, containers=ex(view(outputs=NVML))).params["owned"]
    assert run("container.nvml", command="verify", pod=RUNNING, containers=ex(view())) == []
    assert run("container.nvml", command="verify", pod=RUNNING, containers=ex(view(outputs=NVML, devices=[]))) == []


# ------------------------------------------------------------------ container.pid1


def test_pid1_shell_from_the_runbook_table() -> None:
    d = only("container.pid1", command="verify", containers=ex(view(pid1="bash")))
    assert d.params == {"pod": "ml/p", "container": "c", "comm": "bash"}


def test_pid1_the_program_itself_or_unreadable_is_fine() -> None:
    assert run("container.pid1", command="verify", containers=ex(view(pid1="python"))) == []
    assert run("container.pid1", command="verify", containers=ex(view(pid1=None))) == []


# ------------------------------------------------------------------ container.torch_build


def test_torch_cpu_build() -> None:
    cpu = TorchInfo("2.3.0+cpu", None, False, 0)
    d = only("container.torch_build", command="verify", containers=ex(view(torch=cpu)))
    assert d.code == "TORCH_CPU_BUILD" and d.params == {"pod": "ml/p", "container": "c"}


def test_torch_cuda_build_or_no_torch_is_not_cpu_only() -> None:
    assert run("container.torch_build", command="verify", containers=ex(view(torch=GOOD_TORCH))) == []
    assert run("container.torch_build", command="verify", containers=ex(view(torch=None))) == []


# ------------------------------------------------------------------ container.driver_cuda


def test_driver_cuda_older_than_the_torch_build() -> None:
    new = TorchInfo("2.5.0", "12.6", False, 0)
    reading = NodeObservation("g1", driver_version="535.104", cuda_version="12.2")
    d = only("container.driver_cuda", command="verify", containers=ex(view(torch=new)), readings={"g1": reading})
    assert d.code == "DRIVER_TOO_OLD"
    assert (d.params["driver"], d.params["driver_cuda"], d.params["container_cuda"]) == ("535.104", "12.2", "12.6")


def test_driver_cuda_from_the_container_when_the_node_is_not_read_and_a_match_is_silent() -> None:
    new = TorchInfo("2.5.0", "12.6", False, 0)
    d = only("container.driver_cuda", command="verify", containers=ex(view(torch=new, smi_cuda="12.2")))
    assert d.params["driver_cuda"] == "12.2" and d.params["driver"] == "550.54"
    assert run("container.driver_cuda", command="verify", containers=ex(view(torch=GOOD_TORCH))) == []
