"""node-status's rows built as each node answers (``bot.engine.node_rows.EarlyRows``) are the rows
built after every read, and stand only for the very reading, verdicts, placement and pods they
were built from. The end-to-end case (a reading completed after the fan-out by the kubelet's
Lease and dcgm-exporter) is in tests/scenarios/test_dcgm_exporter.py."""

from __future__ import annotations

from bot.engine.cards import EarlyVerdicts
from bot.engine.facts import EARLY_CARD_VERDICTS, EARLY_NODE_ROWS, Facts
from bot.engine.node_rows import EarlyRows, build_node_rows
from bot.probes.nvidia_smi import ProcRow, parse_gpu_query
from bot.probes.observation import NodeObservation
from tests.facts import facts, node, slim


def _reading(name: str, used: int) -> NodeObservation:
    csv = "\n".join(f"{i}, GPU-{name}-{i}, NVIDIA A100, 50, {used * i}, 81920, {30 + 10 * i}, {60 * (i + 1)}"
                    for i in range(4))
    obs = NodeObservation(node=name, gpus=parse_gpu_query(csv), kubelet="active", driver_version="550.54.15")
    obs.processes = [ProcRow(1, "python", 1024.0, f"GPU-{name}-3")]
    obs.notes = ["read from the node"]
    return obs


def _facts() -> Facts:
    names = ("a", "b", "c")
    return facts("node-status", nodes=[node(n, gpu=4) for n in names],
                 node_pods={n: [slim(f"train-{n}", n, gpu=2)] for n in names})


def _dicts(rows: list) -> list[dict]:
    return [r.to_dict() for r in rows]


def test_rows_built_as_nodes_answer_are_the_rows_built_after_and_only_for_what_they_were_built_from() -> None:
    kept = {"a": _reading("a", 9000), "b": _reading("b", 0), "c": _reading("c", 4000)}
    f = _facts()
    f.node_table = True
    cards = EarlyVerdicts(f.table("working_signals"), f.table("working_profiles"), f.node_pods)
    rows = EarlyRows(f)
    for name, reading in (("a", kept["a"]), ("b", _reading("b", 7000)), ("c", kept["c"])):
        cards.answered(name, reading)  # b: a reading that is not the one the report keeps
        rows.answered(name, cards.done.get(name))
    f.node_pods["c"] = list(f.node_pods["c"])  # c: a pod list that is not the one the rows were built from
    kept["a"].notes.append("added after the fan-out")  # what the Lease and dcgm-exporter steps do
    kept["a"].kubelet = "inactive"
    f.put("node_readings", kept)
    f.put(EARLY_CARD_VERDICTS, cards.done)
    f.put(EARLY_NODE_ROWS, rows.done)
    early = build_node_rows(f)

    plain = _facts()
    plain.put("node_readings", kept)
    late = build_node_rows(plain)

    by_node = {r.node: r for r in early}
    assert by_node["a"] is rows.done["a"].row  # built once, as a answered
    assert f.card_pods["a"] is cards.done["a"].placed and f.card_verdicts["a"] is cards.done["a"].verdicts
    assert by_node["b"] is not rows.done["b"].row and by_node["c"] is not rows.done["c"].row
    assert _dicts(early) == _dicts(late)
    assert by_node["a"].kubelet == "inactive" and by_node["a"].notes[-1] == "added after the fan-out"
    assert [c.verdict for c in by_node["a"].gpus] == ["idle", "busy", "busy", "busy"]
    assert by_node["a"].gpus[3].processes == 1


def test_without_the_table_no_row_is_built_early() -> None:
    f = _facts()
    assert not f.node_table  # set by the runner only where the runbook shows the table
    cards = EarlyVerdicts(f.table("working_signals"), f.table("working_profiles"), f.node_pods)
    cards.answered("a", _reading("a", 0))
    assert cards.done["a"].placed == {} and cards.done["a"].verdicts is not None
