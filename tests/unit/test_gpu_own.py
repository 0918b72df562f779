"""gpubot's own DaemonSets (the read-only agent, the actuator) are never GPU-stack evidence."""

from __future__ import annotations

from bot.engine.facts import GpuComponents, component_pods
from bot.kube.gpu import is_gpu_component, is_gpu_node, is_own_component
from bot.probes.node_agent import ACTUATOR_NAME, AGENT_NAME

_OWN_LABELS = {"app.kubernetes.io/name": AGENT_NAME, "app.kubernetes.io/part-of": "gpubot"}


def _pod(name: str, node: str, labels: dict[str, str]) -> dict:
    owner = {"kind": "DaemonSet", "name": name.rsplit("-", 1)[0], "controller": True}
    return {
        "metadata": {"name": name, "namespace": "gpubot", "labels": labels, "ownerReferences": [owner]},
        "spec": {"nodeName": node},
    }


def test_own_daemonsets_are_not_gpu_components() -> None:
    for name in (AGENT_NAME, ACTUATOR_NAME, f"release-{AGENT_NAME}", f"{ACTUATOR_NAME}-x7k2p"):
        assert is_own_component(name)
        assert not is_gpu_component(name)
    # by labels alone, whatever the release called the DaemonSet
    assert not is_gpu_component("prod-agent-abcde", {"app.kubernetes.io/name": ACTUATOR_NAME})
    assert not is_gpu_component("qgpu-looking-name", {"app.kubernetes.io/part-of": "gpubot"})
    # the GPU stack itself still counts
    assert is_gpu_component("nvidia-device-plugin-daemonset-abcde")
    assert is_gpu_component("qgpu-manager-xyz", {"app": "qgpu-manager"})
    assert not is_own_component("nvidia-device-plugin-daemonset-abcde", {"app": "nvidia-device-plugin"})


def test_agent_pod_on_a_cpu_node_does_not_make_it_a_gpu_node() -> None:
    cpu_node = {"metadata": {"name": "cpu-1", "labels": {}}, "status": {"capacity": {"cpu": "8"}}}
    pods = [_pod(f"{AGENT_NAME}-abcde", "cpu-1", _OWN_LABELS), _pod(f"{ACTUATOR_NAME}-fghij", "cpu-1", {})]
    components = GpuComponents(controllers=[], pods=component_pods(pods))
    assert components.pods == []
    running = components.nodes_running_components()
    assert running == set()
    assert not is_gpu_node(cpu_node, running)
    # a real device-plugin pod on the same node still marks it
    plugin = _pod("nvidia-device-plugin-daemonset-abcde", "cpu-1", {"app": "nvidia-device-plugin"})
    components = GpuComponents(controllers=[], pods=component_pods([*pods, plugin]))
    assert is_gpu_node(cpu_node, components.nodes_running_components())
