"""The per-node DaemonSets: the read-only node agent the bot execs its node reads into, and the
privileged actuator that exists only with remediation.

The agent must be what ``bot/probes/node_agent.py`` looks for (label, container, namespace), sit
on exactly the nodes ``bot/kube/gpu.py`` counts as GPU machines, mount read-only what the
allow-listed reads (``bot/probes/ssh.py`` READ_COMMANDS) name, and hold no privilege. Checked on
every variant the chart tests render, with the bot's own matching code where it has one.
"""

from __future__ import annotations

import posixpath
from typing import Any

import pytest

from bot.kube.affinity import node_matches
from bot.kube.gpu import GPU_LABEL_KEYS, GPU_LABEL_VALUES, is_gpu_node
from bot.kube.taints import untolerated_taints
from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.probes.node_agent import AGENT_CONTAINER, AGENT_SELECTOR, find_agents
from bot.probes.ssh import READ_COMMANDS
from tests.deploy.render import (
    NAMESPACE,
    Obj,
    combination_id,
    combination_values,
    find,
    one,
    prerender,
    render,
    valid,
    variants,
)

AGENT = "gpubot-node"
ACTUATOR = "gpubot-actuator"


@pytest.fixture(scope="module")
def all_renders() -> dict[str, tuple[dict[str, Any], list[Obj]]]:
    prerender([combination_values(c) for c in variants()], lint=False)  # lint: test_chart.py
    return {combination_id(c): (c, render(combination_values(c))) for c in variants() if valid(c)}


def _pod(daemonset: Obj) -> Obj:
    """The DaemonSet's pod template as a pod (what the bot's scheduling code reads)."""
    return {"metadata": daemonset["spec"]["template"]["metadata"], "spec": daemonset["spec"]["template"]["spec"]}


def _node(name: str, labels: dict[str, str], taints: list[Obj] | None = None) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or []}}


def _host_mounts(daemonset: Obj) -> dict[str, tuple[Obj, Obj]]:
    """mount path -> (mount, hostPath volume) for every hostPath the container mounts."""
    spec = daemonset["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    (container,) = spec["containers"]
    return {
        m["mountPath"]: (m, volumes[m["name"]]["hostPath"])
        for m in container.get("volumeMounts", [])
        if "hostPath" in volumes[m["name"]]
    }


def test_the_agent_is_what_the_bot_looks_for() -> None:
    objs = render()
    daemonset = one(objs, "DaemonSet", AGENT)
    key, _, value = AGENT_SELECTOR.partition("=")
    assert daemonset["metadata"]["namespace"] == NAMESPACE
    assert daemonset["metadata"]["labels"][key] == value, "the bot lists the DaemonSet by this label"
    assert daemonset["spec"]["template"]["metadata"]["labels"][key] == value, "and its pods"
    assert (
        daemonset["spec"]["selector"]["matchLabels"].items()
        <= daemonset["spec"]["template"]["metadata"]["labels"].items()
    )
    assert [c["name"] for c in daemonset["spec"]["template"]["spec"]["containers"]] == [AGENT_CONTAINER]
    env = {
        e["name"]: e["value"]
        for e in one(objs, "Deployment", "gpubot")["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["GPUBOT_NAMESPACE"] == daemonset["metadata"]["namespace"]
    # find_agents, on the rendered DaemonSet, says a ready agent pod is the node's agent
    pod = {
        "metadata": {"name": "gpubot-node-x", "labels": daemonset["spec"]["template"]["metadata"]["labels"]},
        "spec": {"nodeName": "gpu-1"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert find_agents({"gpu-1": _node("gpu-1", {})}, [pod], [daemonset])["gpu-1"].ready


def test_the_agent_runs_on_every_gpu_node_the_bot_knows_by_label_and_nowhere_else() -> None:
    """Each GPU label of bot/kube/gpu.py alone selects a node (the terms are OR'ed); a plain
    node is not selected. Evaluated with the bot's own node-affinity code."""
    pod = _pod(one(render(), "DaemonSet", AGENT))
    labelled = [{key: "x"} for key in GPU_LABEL_KEYS]
    labelled += [{key: value} for key, values in GPU_LABEL_VALUES.items() for value in sorted(values)]
    labelled += [{key: value.capitalize()} for key, values in GPU_LABEL_VALUES.items() for value in sorted(values)]
    for i, labels in enumerate(labelled):
        node = _node(f"gpu-{i}", labels)
        assert is_gpu_node(node), labels
        assert node_matches(pod, node).ok, f"the agent would not run on a node labelled {labels}"
    for labels in ({}, {"kubernetes.io/os": "linux"}, {"nvidia.com/gpu.present": "false"}, {"gpu": "off"}):
        node = _node("cpu-1", labels)
        assert not is_gpu_node(node) and not node_matches(pod, node).ok, labels
    extra = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a100"]}]}
    pod = _pod(one(render({"gpuNodes": {"extraNodeSelectorTerms": [extra]}}), "DaemonSet", AGENT))
    assert node_matches(pod, _node("a", {"pool": "a100"})).ok


def test_the_agent_tolerates_the_gpu_taints_and_names_the_others() -> None:
    daemonset = one(render(), "DaemonSet", AGENT)
    pod = _pod(daemonset)
    for taint in (
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "effect": "NoExecute"},
        {"key": "sku", "value": "gpu", "effect": "NoSchedule"},
    ):
        assert not untolerated_taints(pod, _node("gpu-1", {"nvidia.com/gpu.present": "true"}, [taint])), taint
    other = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    node = _node("gpu-2", {"nvidia.com/gpu.present": "true"}, [other])
    assert untolerated_taints(pod, node)
    reason = find_agents({"gpu-2": node}, [], [daemonset])["gpu-2"].reason
    assert "dedicated=ml:NoSchedule" in reason, reason
    tolerated = {"daemonsets": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}
    assert not untolerated_taints(_pod(one(render(tolerated), "DaemonSet", AGENT)), node)


def test_the_agent_mounts_what_the_reads_name_read_only_at_the_same_paths() -> None:
    daemonset = one(render(), "DaemonSet", AGENT)
    mounts = _host_mounts(daemonset)
    for path, (mount, host) in mounts.items():
        assert mount.get("readOnly") is True, f"{path} is writable"
        assert host["path"] == path, f"{host['path']} is mounted at {path}: the reads name host paths"
    read_paths = {posixpath.dirname(CHECKPOINT_PATH), "/dev"}
    assert read_paths <= set(mounts), "the checkpoint's directory and /dev (ls /dev/nvidia*, /dev/kmsg)"
    assert any(CHECKPOINT_PATH in c for c in READ_COMMANDS) and any("/dev/nvidia" in c for c in READ_COMMANDS)
    spec = daemonset["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
    assert spec["runtimeClassName"] == "nvidia", "nvidia-smi comes from the NVIDIA runtime"
    # the kernel-log sources the agent's own read takes, all under the read-only /var/log mount
    assert env == {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility",
                   "GPUBOT_KERNEL_LOG_SOURCES": "journal=/var/log/journal,file=/var/log/kern.log,"
                                                "file=/var/log/messages,file=/var/log/syslog"}
    assert "/var/log" in mounts
    without_dev = _host_mounts(one(render({"nodeAgent": {"hostDev": False}}), "DaemonSet", AGENT))
    assert set(without_dev) == set(mounts) - {"/dev"}
    assert (
        "runtimeClassName" not in _pod(one(render({"nodeAgent": {"runtimeClassName": ""}}), "DaemonSet", AGENT))["spec"]
    )


def test_the_agent_user_is_configurable_and_non_root_when_not_zero() -> None:
    spec = _pod(one(render(), "DaemonSet", AGENT))["spec"]
    assert spec["securityContext"]["runAsUser"] == 0, "the checkpoint is 0600 root (deploy/README.md)"
    assert spec["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    spec = _pod(one(render({"nodeAgent": {"runAsUser": 10001}}), "DaemonSet", AGENT))["spec"]
    assert spec["securityContext"]["runAsUser"] == 10001 and spec["securityContext"]["runAsNonRoot"] is True
    assert spec["containers"][0]["securityContext"]["runAsNonRoot"] is True


def test_per_node_daemonsets_in_every_variant(all_renders: dict[str, Any]) -> None:
    """The agent: no privilege, no host namespaces, only read-only hostPath mounts, small.
    The actuator: only with remediation, GPU nodes only, privileged and hostPID for nsenter."""
    for name, (combo, objs) in all_renders.items():
        agents = find(objs, "DaemonSet", AGENT)
        actuators = find(objs, "DaemonSet", ACTUATOR)
        assert len(agents) == int(combo.get("nodeAgent.enabled", True)), name
        assert len(actuators) == int(bool(combo.get("remediation.enabled"))), name
        for agent in agents:
            spec = agent["spec"]["template"]["spec"]
            assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")), name
            assert spec["automountServiceAccountToken"] is False, name
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
            (container,) = spec["containers"]
            sc = container["securityContext"]
            assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False, name
            assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"] == {"drop": ["ALL"]}, name
            assert all(m.get("readOnly") for m, _ in _host_mounts(agent).values()), name
            writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
            assert writable == {"/tmp"}, f"{name}: only its own emptyDir /tmp is writable"
            assert set(container["resources"]["limits"]) == {"cpu", "memory"}, name
            assert not container.get("ports"), f"{name}: the agent listens on nothing"
        for actuator in actuators:
            spec = actuator["spec"]["template"]["spec"]
            (container,) = spec["containers"]
            assert container["name"] == "actuator", name
            assert actuator["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == ACTUATOR, name
            assert spec["hostPID"] is True and container["securityContext"]["privileged"] is True, name
            assert not spec.get("hostNetwork") and spec["automountServiceAccountToken"] is False, name
            assert not _host_mounts(actuator), f"{name}: the actuator reaches the host by nsenter, not by mounts"
            assert node_matches(_pod(actuator), _node("g", {"nvidia.com/gpu.present": "true"})).ok, name
            assert not node_matches(_pod(actuator), _node("c", {})).ok, f"{name}: GPU nodes only"


def test_agents_and_actuators_talk_to_nobody() -> None:
    """Exec runs through the API server and kubelet, not the pod network: deny all both ways."""
    objs = render({"remediation": {"enabled": True}})
    policy = one(objs, "NetworkPolicy", "gpubot-node")
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in policy["spec"] and "egress" not in policy["spec"]
    (names,) = [
        e["values"] for e in policy["spec"]["podSelector"]["matchExpressions"] if e["key"] == "app.kubernetes.io/name"
    ]
    assert set(names) == {AGENT, ACTUATOR}
    for daemonset in find(objs, "DaemonSet"):
        assert daemonset["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] in names
