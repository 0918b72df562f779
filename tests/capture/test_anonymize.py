"""``--anonymize``: names renamed consistently, and the replay still finds the same problems.

The mapping is read from what the command prints (it is never in the file); each expectation is
rewritten with it and must give the same codes in the same order, about the renamed subjects.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.capture.anonymize import apply_mapping, build_mapping
from bot.commands import parse_invocation
from bot.sim.scenario import load_scenario
from tests.capture.conftest import SCENARIOS, LiveSim, cli, diagnose

CASES = [
    ("zombie-checkpoint", "agent"),
    ("leak", "ssh"),
    ("webhook-denied", "agent"),
    ("hami-busy-healthy", "ssh"),
    ("unreachable-node", "ssh"),
]


def _mapping(stderr: str) -> dict[str, str]:
    """``  NEW = OLD`` lines after "anonymized N names" -> {old: new}."""
    lines = stderr.split("anonymized ", 1)[1].splitlines()[1:]
    pairs = [line.strip().split(" = ", 1) for line in lines if " = " in line]
    return {old: new for new, old in pairs}


def _rename(text: str, mapping: dict[str, str]) -> str:
    """A word or a subject (``pod/NS/NAME``, ``deployment/NAME``) with each part renamed."""
    return "/".join(mapping.get(part, part) for part in text.split("/"))


def _findings(report: dict[str, Any], mapping: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(f["code"], _rename(f.get("subject", ""), mapping or {})) for f in report["findings"]]


@pytest.mark.parametrize(("name", "access"), CASES, ids=[f"{n}:{a}" for n, a in CASES])
def test_anonymized_capture_replays_to_the_same_findings(
    name: str, access: str, live_sim: Callable[[str], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = SCENARIOS / f"{name}.yaml"
    expectations = load_scenario(original).expect
    live = live_sim(name)
    namespaces = sorted({parse_invocation(shlex.split(e.run)).namespace for e in expectations if " -n " in e.run})
    out = tmp_path / "capture.yaml"
    flags = [a for ns in namespaces for a in ("-n", ns)]
    argv = ["--config", str(live.config), "capture", "--anonymize", "-o", str(out), "--node-access", access, *flags]
    code, _, err = cli(argv, capsys)
    assert code == 0, err
    mapping = _mapping(err)
    nodes = [o["metadata"]["name"] for o in live.sim.scenario.objects if o["kind"] == "Node"]
    assert nodes and all(n in mapping for n in nodes)
    data = out.read_text(encoding="utf-8")
    for old in mapping:
        if len(old) >= 5:
            assert old not in data, f"{old} is still in the anonymized capture"
    for exp in expectations:
        renamed = " ".join(_rename(word, mapping) for word in shlex.split(exp.run))
        before = diagnose(exp.run, original, access, capsys)
        after = diagnose(renamed, out, access, capsys)
        assert _findings(after) == _findings(before, mapping), f"{name}: {exp.run} -> {renamed}"


def test_the_gpu_stack_and_system_namespaces_keep_their_names() -> None:
    objects = [
        {
            "kind": "Node",
            "metadata": {"name": "gpu-host-17"},
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": "10.1.2.3"},
                    {"type": "Hostname", "address": "gpu-host-17"},
                ]
            },
        },
        {"kind": "Namespace", "metadata": {"name": "kube-system"}},
        {"kind": "Namespace", "metadata": {"name": "acme-research"}},
        {"kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "kube-system"}},
        {
            "kind": "Pod",
            "metadata": {"name": "acme-train-0", "namespace": "acme-research"},
            "spec": {"nodeName": "gpu-host-17"},
        },
        {
            "kind": "Event",
            "metadata": {"name": "e", "namespace": "acme-research"},
            "message": "Successfully assigned acme-research/acme-train-0 to gpu-host-17",
            "involvedObject": {"kind": "Pod", "name": "acme-train-0", "namespace": "acme-research"},
        },
    ]
    mapping = build_mapping(objects)
    assert mapping == {
        "gpu-host-17": "node-1",
        "10.1.2.3": "10.255.0.1",
        "acme-research": "ns-1",
        "acme-train-0": "pod-1",
    }
    out = apply_mapping(objects, mapping)
    assert out[3]["metadata"] == {"name": "nvidia-device-plugin-daemonset", "namespace": "kube-system"}
    assert out[4]["spec"]["nodeName"] == "node-1"
    assert out[5]["message"] == "Successfully assigned ns-1/pod-1 to node-1"
    assert out[0]["status"]["addresses"] == [
        {"type": "InternalIP", "address": "10.255.0.1"},
        {"type": "Hostname", "address": "node-1"},
    ]
