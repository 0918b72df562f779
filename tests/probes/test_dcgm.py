"""dcgm-exporter's metrics parsed into cards: memory, load, last Xid and the pod holding each card
(tests/data/dcgm: the format and labels of NVIDIA's published output, sources named there)."""

from __future__ import annotations

from pathlib import Path

from bot.probes.dcgm import PodOnCard, parse_metrics

DATA = Path(__file__).resolve().parents[1] / "data" / "dcgm"
HELD = "GPU-5f1d3c2a-8b7e-4c6d-9e0f-1a2b3c4d5e6f"
FREE = "GPU-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"


def test_cards_their_fields_and_the_pod_that_holds_one() -> None:
    reading = parse_metrics((DATA / "h100-two-cards.prom").read_text())
    assert not reading.problems and reading.hostname == "gpu-h100-07"
    assert list(reading.cards) == [HELD, FREE]
    held, free = reading.cards[HELD], reading.cards[FREE]
    assert (held.index, held.model, held.fb_used_mib, held.fb_free_mib, held.utilization_gpu) == (
        0, "NVIDIA H100 80GB HBM3", 78036, 3016, 97)
    assert held.pods == [PodOnCard("llm", "mixtral-finetune-0", "trainer")]
    assert (held.temperature_c, held.power_w, held.last_xid) == (61, 612.345, 0)
    # the MIG instance's own FB_USED (GPU_I_ID) does not overwrite the card's
    assert (free.index, free.fb_used_mib, free.utilization_gpu, free.last_xid, free.pods) == (1, 48, 0, 94, [])
    # a field DCGM marks blank is not a number, and not exported ones stay None
    assert held.ecc_dbe_volatile is None


def test_the_readme_quickstart_lines_and_blank_values() -> None:
    labels = '{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",container="",namespace="",pod=""}'
    text = f"DCGM_FI_DEV_FB_USED{labels} 9223372036854775794\nDCGM_FI_DEV_GPU_UTIL{labels} 12\n"
    (card,) = parse_metrics(text).cards.values()
    assert (card.index, card.uuid, card.fb_used_mib, card.utilization_gpu, card.pods) == (
        0, "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", None, 12, [])


def test_an_answer_that_is_not_the_format_is_a_problem_not_an_empty_node() -> None:
    reading = parse_metrics("<html>502 Bad Gateway</html>\n")
    assert not reading.cards and reading.problems
    assert reading.problems[0].startswith("dcgm-exporter's answer is not the Prometheus text format")
