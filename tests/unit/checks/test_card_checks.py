"""Per-card and per-node reading checks on hand-built node readings."""

from __future__ import annotations

from bot.probes.checkpoint import Checkpoint, CheckpointEntry
from bot.probes.nvidia_smi import GpuRow, ProcRow
from bot.probes.observation import NodeObservation
from tests.facts import only, run, slim

QCORE = "tke.cloud.tencent.com/qgpu-core"


def card(uuid: str = "GPU-a", *, util: float = 0, mem: float = 0, temp: float = 33, power: float = 30,
         index: int = 0) -> GpuRow:
    return GpuRow(index, uuid, "NVIDIA A100-SXM4-80GB", util, mem, 81920, temp, power)


def checkpoint(*entries: tuple[str, str, list[str]]) -> Checkpoint:
    return Checkpoint([CheckpointEntry(uid, "c", res, ids) for uid, res, ids in entries], {}, "v2")


def obs(node: str = "g1", **kwargs: object) -> NodeObservation:
    return NodeObservation(node, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ card.working


def test_working_busy_and_idle_cards_per_node() -> None:
    reading = obs(gpus=[card("GPU-a", util=95, mem=40000, temp=70, power=300, index=0),
                        card("GPU-b", index=1)])
    found = {d.code: d for d in run("card.working", command="node-status", readings={"g1": reading})}
    assert set(found) == {"GPU_BUSY", "GPU_IDLE"}
    assert found["GPU_BUSY"].params["count"] == 1 and found["GPU_IDLE"].params["node"] == "g1"


def test_working_no_cards_no_verdict() -> None:
    assert run("card.working", command="node-status", readings={"g1": obs()}) == []


# ------------------------------------------------------------------ checkpoint.zombies


def test_zombie_checkpoint_entries_of_pods_that_are_gone() -> None:
    reading = obs(checkpoint=checkpoint(("dead-uid", "nvidia.com/gpu", ["GPU-a", "GPU-b"]),
                                        ("uid-live", "nvidia.com/gpu", ["GPU-c"])))
    d = only("checkpoint.zombies", command="node-status", readings={"g1": reading},
             node_pods={"g1": [slim("live", "g1")]})
    assert d.code == "CHECKPOINT_ZOMBIE"
    assert d.params == {"node": "g1", "count": 1, "uids": "dead-uid", "devices": 2, "qgpu": False}


def test_zombie_qgpu_entry_and_a_clean_checkpoint() -> None:
    reading = obs(checkpoint=checkpoint(("dead", QCORE, ["q0"])))
    assert only("checkpoint.zombies", command="node-status", readings={"g1": reading}).params["qgpu"] is True
    clean = obs(checkpoint=checkpoint(("uid-live", "nvidia.com/gpu", ["GPU-a"])))
    assert run("checkpoint.zombies", command="node-status", readings={"g1": clean},
               node_pods={"g1": [slim("live", "g1")]}) == []
    assert run("checkpoint.zombies", command="node-status", readings={"g1": obs()}) == []


# ------------------------------------------------------------------ leak.triage


def test_leak_allocated_but_idle_cards() -> None:
    """Idle cards that the checkpoint still gives to a pod the API no longer has."""
    reading = obs(gpus=[card()], checkpoint=checkpoint(("dead-uid", "nvidia.com/gpu", ["GPU-a"])))
    d = only("leak.triage", command="node-status", readings={"g1": reading}, node_pods={"g1": []})
    assert (d.code, d.params) == ("LEAK_LOGICAL_NOT_PHYSICAL", {"node": "g1", "qgpu": False})
    assert d.evidence[0].startswith("g1 API allocation: none by live pods; checkpoint holds 1 entry(ies)")


def test_idle_cards_a_terminating_pod_still_holds_are_not_a_leak() -> None:
    """The API counts a Terminating pod's request until it is gone and its containers have
    stopped: idle cards are what that looks like (TERMINATING_HOLDS_GPU's story, whose fix is the
    pod, not the checkpoint)."""
    pods = {"g1": [slim("old", "g1", deleting="t")]}
    assert run("leak.triage", command="node-status", readings={"g1": obs(gpus=[card()])}, node_pods=pods) == []
    # with a zombie entry beside it, the checkpoint does hold what nobody has
    reading = obs(gpus=[card()], checkpoint=checkpoint(("dead-uid", "nvidia.com/gpu", ["GPU-b"])))
    d = only("leak.triage", command="node-status", readings={"g1": reading}, node_pods=pods)
    assert d.code == "LEAK_LOGICAL_NOT_PHYSICAL"


def test_leak_real_use_is_allocation_real() -> None:
    reading = obs(gpus=[card(util=90, mem=30000)], processes=[ProcRow(42, "python", 30000, "GPU-a")])
    d = only("leak.triage", command="node-status", readings={"g1": reading}, node_pods={"g1": [slim("w", "g1")]})
    assert d.code == "ALLOCATION_REAL" and d.params == {"node": "g1", "pod": "ml/w"}


def test_leak_a_starting_pod_is_not_a_leak_and_no_allocation_is_silent() -> None:
    starting = {"g1": [slim("s", "g1", phase="Pending")]}
    assert run("leak.triage", command="node-status", readings={"g1": obs(gpus=[card()])}, node_pods=starting) == []
    assert run("leak.triage", command="node-status", readings={"g1": obs(gpus=[card()])}) == []


# ------------------------------------------------------------------ card.qgpu_over_quota


def test_qgpu_over_quota_within_the_float_is_reported() -> None:
    reading = obs(gpus=[card(util=24)], processes=[ProcRow(1, "python", 100, "GPU-a")])
    pods = {"g1": [slim("s", "g1", resource=QCORE, gpu=20)]}
    d = only("card.qgpu_over_quota", command="node-status", readings={"g1": reading}, node_pods=pods)
    assert d.params == {"node": "g1", "pod": "ml/s", "utilization": "24", "core_quota": "20"}


def test_qgpu_over_quota_beyond_the_float_or_under_quota_is_not() -> None:
    pods = {"g1": [slim("s", "g1", resource=QCORE, gpu=20)]}
    for util in (40, 15):
        reading = obs(gpus=[card(util=util)], processes=[ProcRow(1, "python", 100, "GPU-a")])
        assert run("card.qgpu_over_quota", command="node-status", readings={"g1": reading}, node_pods=pods) == []
