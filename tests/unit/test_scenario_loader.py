"""The scenario loader accepts the documented format and names the file and the problem otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.errors import ScenarioError
from bot.sim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, data: object, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_repo_scenario_loads(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name and scenario.objects and scenario.expect


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "scenario: x\nkubernetes: [\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(path) in str(err.value) and "line" in str(err.value)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"scenario": "x"}, "kubernetes: missing"),
        ({"scenario": "x", "kubernetes": {"objects": [{"kind": "Pod"}]}}, "missing apiVersion"),
        ({"scenario": "x", "kubernetes": {"objects": [{"apiVersion": "v1", "kind": "Pod"}]}}, "metadata.name"),
        ({"scenario": "x", "kubernetes": {"objects": []}, "nodes": {"n1": {"ssh": "maybe"}}}, "nodes.n1.ssh"),
        (
            {
                "scenario": "x",
                "kubernetes": {"objects": []},
                "nodes": {"n1": {"gpus": [{"uuid": "G", "power_w": "hot"}]}},
            },
            "nodes.n1.gpus[0].power_w",
        ),
        ({"scenario": "x", "kubernetes": {"objects": []}, "containers": {"bad-key": {}}}, "namespace/pod/container"),
        ({"scenario": "x", "kubernetes": {"objects": []}, "api": {"faults": [{"rate": 2}]}}, "rate"),
        ({"scenario": "x", "kubernetes": {"objects": []}, "expect": [{"codes": ["X"]}]}, "expect[0]"),
        (["not", "a", "mapping"], "top level"),
    ],
)
def test_malformed_scenarios_are_rejected_with_file_and_problem(tmp_path: Path, data: object, fragment: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    message = str(err.value)
    assert message.startswith(str(path)), message
    assert fragment in message, message


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "nope.yaml")


def test_kubectl_list_output_is_accepted(tmp_path: Path) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    data = {
        "scenario": "from-kubectl",
        "kubernetes": {"version": "v1.29.0", "objects": [{"apiVersion": "v1", "kind": "List", "items": [node, pod]}]},
    }
    scenario = load_scenario(_write(tmp_path, data))
    assert [o["kind"] for o in scenario.objects] == ["Node", "Pod"]
    # A bare List in place of `objects` works too.
    data["kubernetes"] = {"objects": {"apiVersion": "v1", "kind": "List", "items": [node]}}
    assert [o["kind"] for o in load_scenario(_write(tmp_path, data, "b.yaml")).objects] == ["Node"]


def _node_scenario(tmp_path: Path, node: dict[str, object]) -> Path:
    return _write(tmp_path, {"scenario": "x", "kubernetes": {"objects": []}, "nodes": {"n1": node}})


def test_gpu_health_fields_load(tmp_path: Path) -> None:
    path = _node_scenario(tmp_path, {
        "gpus": [{"index": 0, "uuid": "GPU-a", "lost": True, "bus_id": "0000:3b:00.0"},
                 {"index": 1, "uuid": "GPU-b", "lost": "GPU is lost.  Reboot the system to recover this GPU",
                  "ecc_volatile_uncorrected": None, "remapped_rows_pending": True}],
        "xid": [{"time": "2026-01-01T00:00:00Z", "pci": "0000:3b:00", "xid": 79, "text": "fallen off the bus"}],
        "kernel_log": [{"time": "2026-01-01T00:00:00Z", "text": "NVRM: loading"}],
        "kernel_log_source": "dmesg",
    })
    node = load_scenario(path).nodes["n1"]
    assert [g.lost for g in node.gpus] == ["Unknown Error", "GPU is lost.  Reboot the system to recover this GPU"]
    assert node.gpus[1].ecc_volatile_uncorrected is None and node.gpus[1].remapped_rows_pending
    assert [(x.xid, x.pid) for x in node.xid] == [(79, "<unknown>")] and node.kernel_log_source == "dmesg"


@pytest.mark.parametrize(
    ("node", "fragment"),
    [
        ({"gpus": [{"uuid": "GPU-a", "lost": 3}]}, "gpus[0].lost"),
        ({"gpus": [{"uuid": "GPU-a", "ecc_volatile_uncorrected": -1}]}, "ecc_volatile_uncorrected"),
        ({"gpus": [{"uuid": "GPU-a", "retired_pages_pending": "yes"}]}, "retired_pages_pending"),
        ({"xid": [{"time": "t", "pci": "0000:3b:00"}]}, "xid[0]"),
        ({"xid": [{"time": "t", "pci": "p", "xid": "seventy-nine"}]}, "xid[0].xid"),
        ({"xid": "79"}, "nodes.n1.xid"),
        ({"kernel_log": [{"time": "t"}]}, "kernel_log[0]"),
        ({"kernel_log_source": "syslog"}, "kernel_log_source"),
    ],
)
def test_bad_gpu_health_fields_are_named(tmp_path: Path, node: dict[str, object], fragment: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(_node_scenario(tmp_path, node))
    assert fragment in str(err.value)
