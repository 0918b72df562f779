"""``base:`` includes: a scenario states only what differs from a shared cluster, and loads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.errors import ScenarioError
from bot.sim.scenario import load_scenario, scenario_from_dict
from tests import yaml_data

ROOT = Path(__file__).resolve().parents[2]


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def _ns(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _pod(name: str, namespace: str = "ai", image: str = "img:1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False) if not isinstance(data, str) else data, encoding="utf-8")
    return path


GPU = {"index": 0, "uuid": "GPU-0", "name": "Tesla V100-SXM2-32GB", "memory_total_mib": 32768}


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    """A fragment base: objects and facts, no scenario name, no expectations."""
    return _write(
        tmp_path / "bases" / "cluster.yaml",
        {
            "kubernetes": {
                "version": "v1.29.4",
                "objects": [_node("gpu-1", zone="a"), _node("gpu-2"), _ns("ai"), _pod("sleeper")],
            },
            "nodes": {
                "gpu-1": {
                    "address": "10.0.0.1",
                    "driver": "535.161.08",
                    "cuda": "12.2",
                    "gpus": [GPU],
                    "checkpoint": "{}\n",
                },
                "gpu-2": {"address": "10.0.0.2", "ssh": "unreachable"},
            },
            "containers": {
                "ai/sleeper/main": {
                    "pid1": "sleep",
                    "env": {"A": "1", "B": "2"},
                    "torch": {"version": "2.1.0+cu121", "cuda": "12.1", "available": True, "device_count": 1},
                }
            },
            "expect": [{"run": "node-status", "codes": ["GPU_IDLE"]}],
        },
    )


def _scenario(tmp_path: Path, name: str = "s.yaml", **body: Any) -> Path:
    return _write(tmp_path / name, {"scenario": "s", "base": "bases/cluster.yaml", **body})


def test_a_base_fragment_is_inherited_whole(tmp_path: Path, cluster: Path) -> None:
    sc = load_scenario(_scenario(tmp_path, expect=[{"run": "node-status"}]))
    assert sc.version == "v1.29.4"
    assert [o["metadata"]["name"] for o in sc.objects] == ["gpu-1", "gpu-2", "ai", "sleeper"]
    assert sc.nodes["gpu-1"].driver == "535.161.08" and sc.nodes["gpu-2"].ssh == "unreachable"
    assert sc.containers["ai/sleeper/main"].env == {"A": "1", "B": "2"}
    assert sc.source == str(tmp_path / "s.yaml")


def test_an_object_with_the_same_identity_replaces_the_base_one_in_place(tmp_path: Path, cluster: Path) -> None:
    new_node = _node("gpu-1", zone="b")
    new_node["apiVersion"] = "v1"  # the identity is kind + namespace + name, not the apiVersion
    data = {"kubernetes": {"objects": [_pod("trainer"), new_node, _pod("sleeper", image="img:2")]}}
    sc = load_scenario(_scenario(tmp_path, **data))
    assert [(o["kind"], o["metadata"]["name"]) for o in sc.objects] == [
        ("Node", "gpu-1"),
        ("Node", "gpu-2"),
        ("Namespace", "ai"),
        ("Pod", "sleeper"),
        ("Pod", "trainer"),
    ]
    # Replaced whole, never merged field by field: what was pasted is what is served.
    assert sc.objects[0]["metadata"]["labels"] == {"zone": "b"}
    assert sc.objects[3]["spec"]["containers"][0]["image"] == "img:2"
    # A pod of the same name in another namespace is a different object.
    sc = load_scenario(_scenario(tmp_path, "t.yaml", kubernetes={"objects": [_pod("sleeper", namespace="ml")]}))
    assert [o["metadata"].get("namespace") for o in sc.objects if o["kind"] == "Pod"] == ["ai", "ml"]


def test_kubectl_list_output_merges_too(tmp_path: Path, cluster: Path) -> None:
    pasted = {"apiVersion": "v1", "kind": "List", "items": [_node("gpu-2", pool="spot"), _pod("extra")]}
    sc = load_scenario(_scenario(tmp_path, kubernetes={"objects": [pasted]}))
    assert [o["metadata"]["name"] for o in sc.objects] == ["gpu-1", "gpu-2", "ai", "sleeper", "extra"]
    assert sc.objects[1]["metadata"]["labels"] == {"pool": "spot"}
    # A whole `kubernetes:` that is kubectl's List document works as well.
    sc = load_scenario(_scenario(tmp_path, "t.yaml", kubernetes=pasted))
    assert sc.version == "v1.29.4" and len(sc.objects) == 5


def test_remove_drops_base_objects(tmp_path: Path, cluster: Path) -> None:
    remove = [{"kind": "Pod", "namespace": "ai", "name": "sleeper"}, {"kind": "Node", "name": "gpu-2"}]
    sc = load_scenario(_scenario(tmp_path, remove=remove, kubernetes={"objects": [_pod("new")]}))
    assert [o["metadata"]["name"] for o in sc.objects] == ["gpu-1", "ai", "new"]


def test_removing_what_the_base_lacks_is_an_error(tmp_path: Path, cluster: Path) -> None:
    path = _scenario(tmp_path, remove=[{"kind": "Pod", "name": "sleeper"}])
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (f"{path}: remove[0]: the base has no Pod sleeper (it has ai/sleeper: give the namespace)")
    with pytest.raises(ScenarioError, match=r"remove\[0\]: must be a mapping with kind and name"):
        load_scenario(_scenario(tmp_path, "t.yaml", remove=["Pod/sleeper"]))


def test_version_overrides(tmp_path: Path, cluster: Path) -> None:
    assert load_scenario(_scenario(tmp_path, kubernetes={"version": "v1.31.1"})).version == "v1.31.1"


def test_nodes_and_containers_deep_merge_per_key(tmp_path: Path, cluster: Path) -> None:
    sc = load_scenario(
        _scenario(
            tmp_path,
            nodes={
                "gpu-1": {"driver": "470.82.01", "checkpoint": None, "gpus": [{**GPU, "utilization_gpu": 90}]},
                "gpu-2": None,
                "gpu-3": {"address": "10.0.0.3"},
            },
            containers={"ai/sleeper/main": {"pid1": "bash", "env": {"B": None, "C": "3"}, "torch": {"cuda": None}}},
        )
    )
    gpu1 = sc.nodes["gpu-1"]
    assert (gpu1.address, gpu1.driver, gpu1.cuda) == ("10.0.0.1", "470.82.01", "12.2")  # kept, replaced, kept
    assert gpu1.checkpoint is None  # a key set to null is removed
    assert [g.utilization_gpu for g in gpu1.gpus] == [90]  # a list is replaced whole
    assert list(sc.nodes) == ["gpu-1", "gpu-3"]  # a node set to null is dropped; new ones added
    box = sc.containers["ai/sleeper/main"]
    assert box.pid1 == "bash" and box.env == {"A": "1", "C": "3"}
    # torch is one value: `cuda: null` means a CPU-only build, not "inherit the rest".
    assert box.torch == {"cuda": None}


def test_api_faults_merge_by_match_and_verb(tmp_path: Path) -> None:
    faults = [{"match": "/api/v1/pods", "status": 500}, {"match": "/api/v1/nodes", "verb": "get", "status": 429}]
    _write(tmp_path / "base.yaml", {"kubernetes": {"objects": [_node("n")]}, "api": {"faults": faults}})
    over = [{"match": "/api/v1/nodes", "verb": "GET", "rate": 0}, {"match": "/api/v1/events", "delay_s": 1}]
    sc = load_scenario(_write(tmp_path / "s.yaml", {"scenario": "s", "base": "base.yaml", "api": {"faults": over}}))
    assert [(f.match, f.status, f.rate) for f in sc.api_faults] == [
        ("/api/v1/pods", 500, 1.0),
        ("/api/v1/nodes", None, 0.0),
        ("/api/v1/events", None, 1.0),
    ]


def test_expect_scenario_summary_and_source_are_never_inherited(tmp_path: Path) -> None:
    base = {
        "scenario": "base-scenario",
        "summary": "the base's summary",
        "kubernetes": {"objects": [_node("n")]},
        "expect": [{"run": "node-status", "codes": ["GPU_IDLE"]}],
        "source": {"url": "https://example.invalid/1"},
    }
    _write(tmp_path / "base.yaml", base)
    path = _write(tmp_path / "s.yaml", {"scenario": "mine", "base": "base.yaml"})
    sc = load_scenario(path)
    assert (sc.name, sc.summary, sc.expect) == ("mine", "", [])
    # ... and a file without its own scenario name is not a scenario, even if its base is one.
    with pytest.raises(ScenarioError, match="scenario: missing"):
        load_scenario(_write(tmp_path / "t.yaml", {"base": "base.yaml"}))


def test_a_chain_of_bases_resolves_in_order(tmp_path: Path, cluster: Path) -> None:
    _write(
        tmp_path / "bases" / "busy.yaml",
        {"base": "cluster.yaml", "kubernetes": {"objects": [_pod("trainer")]}, "nodes": {"gpu-1": {"cuda": "12.4"}}},
    )
    path = _write(
        tmp_path / "deep" / "s.yaml",
        {
            "scenario": "s",
            "base": "../bases/busy.yaml",
            "remove": [{"kind": "Pod", "namespace": "ai", "name": "sleeper"}],
        },
    )
    sc = load_scenario(path)
    assert [o["metadata"]["name"] for o in sc.objects] == ["gpu-1", "gpu-2", "ai", "trainer"]
    assert (sc.nodes["gpu-1"].driver, sc.nodes["gpu-1"].cuda) == ("535.161.08", "12.4")


def test_a_cycle_is_an_error_naming_the_chain(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", {"base": "b.yaml", "kubernetes": {"objects": []}})
    b = _write(tmp_path / "b.yaml", {"base": "a.yaml"})
    top = _write(tmp_path / "s.yaml", {"scenario": "s", "base": "a.yaml"})
    with pytest.raises(ScenarioError) as err:
        load_scenario(top)
    assert str(err.value) == f"{b}: base: a.yaml makes a cycle (s.yaml -> a.yaml -> b.yaml -> a.yaml)"
    selfish = _write(tmp_path / "self.yaml", {"scenario": "s", "base": "./self.yaml"})
    with pytest.raises(ScenarioError, match=r"self.yaml: base: ./self.yaml makes a cycle"):
        load_scenario(selfish)


def test_a_missing_base_is_an_error_naming_the_including_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.yaml", {"scenario": "s", "base": "bases/nope.yaml"})
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}: base: cannot read bases/nope.yaml: no such file")
    with pytest.raises(ScenarioError, match=r"s.yaml: base: must be the path"):
        load_scenario(_write(tmp_path / "s.yaml", {"scenario": "s", "base": ["x.yaml"]}))
    with pytest.raises(ScenarioError, match=r"s.yaml: remove: needs a base"):
        load_scenario(_write(tmp_path / "s.yaml", {"scenario": "s", "remove": []}))


def test_a_broken_base_is_reported_against_the_base(tmp_path: Path) -> None:
    bad = _write(tmp_path / "base.yaml", {"kubernetes": {"objects": [{"kind": "Node", "metadata": {"name": "n"}}]}})
    with pytest.raises(ScenarioError) as err:
        load_scenario(_write(tmp_path / "s.yaml", {"scenario": "s", "base": "base.yaml"}))
    assert str(err.value) == f"{bad}: kubernetes.objects[0]: missing apiVersion"
    odd = _write(tmp_path / "odd.yaml", {"nodes": ["gpu-1"]})
    with pytest.raises(ScenarioError, match=rf"^{odd}: nodes: must be a mapping$"):
        load_scenario(_write(tmp_path / "u.yaml", {"scenario": "u", "base": "odd.yaml", "nodes": {}}))
    broken = _write(tmp_path / "broken.yaml", "kubernetes: [\n")
    with pytest.raises(ScenarioError, match=rf"{broken}: line \d+: not valid YAML"):
        load_scenario(_write(tmp_path / "t.yaml", {"scenario": "t", "base": "broken.yaml"}))


def test_validation_of_the_merged_scenario_names_the_including_file(tmp_path: Path, cluster: Path) -> None:
    path = _scenario(tmp_path, nodes={"gpu-1": {"ssh": "maybe"}})
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}: nodes.gpu-1.ssh: unknown mode 'maybe'")


def test_a_base_only_works_from_a_file() -> None:
    with pytest.raises(ScenarioError, match="base: only a scenario file can have a base"):
        scenario_from_dict({"scenario": "s", "base": "x.yaml", "kubernetes": {"objects": []}})


def test_shared_bases_are_fragments_outside_the_scenario_glob() -> None:
    bases = sorted((ROOT / "scenarios" / "bases").glob("*.yaml"))
    assert bases, "the bundled scenarios share their clusters through scenarios/bases/"
    for path in bases:
        data = yaml_data.load_file(path)
        assert "expect" not in data and "scenario" not in data, path.name
    users = [p for p in (ROOT / "scenarios").glob("*.yaml") if "base" in yaml_data.load_file(p)]
    assert len(users) >= 2
