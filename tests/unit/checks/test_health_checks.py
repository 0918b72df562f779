"""GPU health (lost and unhealthy cards) on hand-built node readings; odd readings are in
``tests/unit/test_admission_health_checks.py``."""

from __future__ import annotations

from collections.abc import Sequence

from bot.probes.gpu_health import LostGpu, XidEvent
from bot.probes.nvidia_smi import GpuRow
from bot.probes.observation import NodeObservation
from tests.facts import node, only, run

PCI = "00000000:1A:00.0"


def reading(*, xids: Sequence[XidEvent] = (), lost: Sequence[LostGpu] = ()) -> NodeObservation:
    return NodeObservation("g1", gpus=[GpuRow(0, "GPU-a", "A100", 0, 0, 40960, 30, 50, raw={"pci.bus_id": PCI})],
                           ecc_read=True, kernel_log="journal", xids=list(xids), lost_gpus=list(lost))


def xid(number: int) -> XidEvent:
    return XidEvent(PCI, number, "2026-01-01T00:00:00Z", "", "", f"Xid {number}", f"NVRM: Xid (PCI:{PCI}): {number}")


def test_a_card_fallen_off_the_bus_is_lost() -> None:
    found = run("health.gpus", command="node-status", nodes=[node("g1", gpu=1)],
                readings={"g1": reading(xids=[xid(79)])})
    assert [d.code for d in found] == ["GPU_LOST"]
    assert found[0].params["node"] == "g1" and found[0].params["count"] == 1 and found[0].params["cordoned"] is False


def test_a_double_bit_ecc_error_needs_a_reset_and_offers_a_cordon() -> None:
    d = only("health.gpus", command="node-status", nodes=[node("g1", gpu=1)], readings={"g1": reading(xids=[xid(48)])})
    assert (d.code, d.role) == ("GPU_UNHEALTHY", "reset") and d.params["cordon"] is True


def test_a_cordoned_node_is_not_offered_a_cordon_again() -> None:
    d = only("health.gpus", command="node-status", nodes=[node("g1", gpu=1, unschedulable=True)],
             readings={"g1": reading(xids=[xid(48)])})
    assert d.params["cordon"] is False


def test_clean_cards_and_application_xids_say_nothing() -> None:
    assert run("health.gpus", command="node-status", nodes=[node("g1", gpu=1)], readings={"g1": reading()}) == []
    assert run("health.gpus", command="node-status", nodes=[node("g1", gpu=1)],
               readings={"g1": reading(xids=[xid(13)])}) == []
