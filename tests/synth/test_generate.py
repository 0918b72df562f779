"""The scale-scenario generator: deterministic by seed, loadable, and the mix it promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.exit_codes import ExitCode
from bot.sim.scenario import load_scenario, scenario_from_dict
from bot.synth.generate import TARGET_NAMESPACE, TARGET_POD, generate_scenario, parse_spec
from tests import yaml_data


def test_parse_spec() -> None:
    assert parse_spec("nodes=200, gpu_nodes=40,pods=5k,seed=7") == {
        "nodes": 200,
        "gpu_nodes": 40,
        "pods": 5000,
        "seed": 7,
    }
    with pytest.raises(ValueError, match="pods"):
        parse_spec("nodes=2,gpu_nodes=1")
    with pytest.raises(ValueError, match="bad generator spec"):
        parse_spec("nodes=2,gpu_nodes=1,pods=3,color=red")


def test_same_seed_same_cluster_other_seed_other_cluster() -> None:
    a = json.dumps(generate_scenario(nodes=30, gpu_nodes=6, pods=500, seed=1), sort_keys=True)
    b = json.dumps(generate_scenario(nodes=30, gpu_nodes=6, pods=500, seed=1), sort_keys=True)
    c = json.dumps(generate_scenario(nodes=30, gpu_nodes=6, pods=500, seed=2), sort_keys=True)
    assert a == b and a != c


def test_loads_through_scenario_from_dict_with_the_promised_mix() -> None:
    sc = scenario_from_dict(generate_scenario(nodes=30, gpu_nodes=6, pods=500, seed=1, silent_nodes=1))
    by_kind: dict[str, list[dict]] = {}
    for obj in sc.objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    pods = by_kind["Pod"]
    assert len(pods) == 500 and len(by_kind["Node"]) == 30
    assert len({(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}) == 500
    assert len({p["metadata"]["uid"] for p in pods}) == 500
    target = next(p for p in pods if p["metadata"]["name"] == TARGET_POD)
    assert target["metadata"]["namespace"] == TARGET_NAMESPACE and target["status"]["phase"] == "Pending"
    phases = {p["status"]["phase"] for p in pods}
    assert {"Running", "Pending"} <= phases
    assert any("deletionTimestamp" in p["metadata"] for p in pods)  # Terminating
    capacities = [n["status"]["capacity"] for n in by_kind["Node"]]
    assert any("nvidia.com/gpu" in c for c in capacities)
    assert any("tke.cloud.tencent.com/qgpu-core" in c for c in capacities)
    pending = {p["metadata"]["name"] for p in pods if p["status"]["phase"] == "Pending"}
    reasons = {e["involvedObject"]["name"] for e in by_kind["Event"] if e["reason"] == "FailedScheduling"}
    assert pending == reasons  # every pending pod has its FailedScheduling event
    assert set(sc.nodes) == {n["metadata"]["name"] for n in by_kind["Node"] if n["metadata"]["name"].startswith("gpu")}
    assert [n for n, f in sc.nodes.items() if f.ssh == "timeout"] == ["gpu-00005"]
    zombies = [n for n, f in sc.nodes.items() if f.checkpoint and "PodUID" in f.checkpoint]
    assert zombies  # some kubelet checkpoints hold pod UIDs that no pod has
    live_uids = {p["metadata"]["uid"] for p in pods}
    for n in zombies:
        entries = json.loads(sc.nodes[n].checkpoint or "{}")["Data"]["PodDeviceEntries"]
        assert not {e["PodUID"] for e in entries} & live_uids


def test_realistic_objects_are_kilobytes_and_change_nothing_the_checks_read() -> None:
    """``realistic=1`` adds what a real API server serves (managedFields, env, a projected token
    volume, container statuses...) without changing any field a check or the slim records read."""
    from bot.probes.slim import slim

    plain = generate_scenario(nodes=30, gpu_nodes=6, pods=500, seed=1)["kubernetes"]["objects"]
    dressed = generate_scenario(nodes=30, gpu_nodes=6, pods=500, seed=1, realistic=1)["kubernetes"]["objects"]
    pods = [(a, b) for a, b in zip(plain, dressed, strict=True) if a["kind"] == "Pod"]
    assert [slim(a) for a, _ in pods] == [slim(b) for _, b in pods]
    sizes = sorted(len(json.dumps(b, separators=(",", ":"))) for _, b in pods)
    assert 3_000 <= sizes[len(sizes) // 2] <= 8_000 and sizes[0] >= 2_500 and sizes[-1] <= 10_000
    for _, b in pods:
        assert b["metadata"]["managedFields"] and b["spec"]["volumes"][-1]["projected"]["sources"]
        if b["spec"].get("nodeName"):
            assert b["status"]["containerStatuses"]
    for a, b in zip(plain, dressed, strict=True):
        if a["kind"] == "Node":
            assert set(a["metadata"]["labels"].items()) <= set(b["metadata"]["labels"].items())
            assert a["status"]["capacity"] == b["status"]["capacity"]
            assert [c for c in b["status"]["conditions"] if c["type"] == "Ready"] == a["status"]["conditions"]
    sc = scenario_from_dict(generate_scenario(nodes=30, gpu_nodes=6, pods=500, seed=1, realistic=1))
    assert len([o for o in sc.objects if o["kind"] == "Pod"]) == 500


def test_cli_writes_the_generated_scenario_and_the_simulator_loads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen.yaml"
    assert main(["sim", "--generate", "nodes=12,gpu_nodes=3,pods=40,seed=5", "--write", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert yaml_data.load_file(out) == generate_scenario(nodes=12, gpu_nodes=3, pods=40, seed=5)
    assert load_scenario(str(out)).name == "generated-n12-g3-p40-s5"


def test_a_written_realistic_scenario_has_no_aliases_and_loads_back(tmp_path: Path) -> None:
    """The realistic generator shares one image list, toleration list and so on among its objects;
    written with aliases, the file expanded past the reader's alias bound and every command
    refused it ("an alias bomb?")."""
    out = tmp_path / "gen.yaml"
    assert main(["sim", "--generate", "nodes=200,gpu_nodes=40,pods=400,seed=1,realistic=1", "--write", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "&id" not in text and "*id" not in text
    sc = load_scenario(str(out))
    assert len([o for o in sc.objects if o["kind"] == "Node"]) == 200


@pytest.mark.parametrize("spec", ["nodes=2,gpu_nodes=1,pods=3,color=red", "nodes=x", "nodes=1,gpu_nodes=4,pods=1"])
def test_cli_bad_spec_is_a_one_line_usage_error(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "--generate", spec]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("gpubot: --generate: ") and err.count("\n") == 1, err
