"""qGPU enforces a slice's core share on average: utilisation a little above the quota is normal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, node_subject
from bot.engine.checks._common import QGPU_CORE, fmt_num
from bot.engine.facts import Facts
from bot.engine.working import card_label


class QgpuCoreOverQuota(TypedDict):
    node: str
    pod: str
    utilization: str
    core_quota: str


QGPU_CORE_OVER_QUOTA = Code("QGPU_CORE_OVER_QUOTA", QgpuCoreOverQuota)


def run(facts: Facts) -> Iterator[Detection]:
    """QGPU_CORE_OVER_QUOTA (info) when a card's utilisation exceeds its pods' quota within the float."""
    rows = facts.table("qgpu_quota") or [{}]
    try:
        float_points = float(rows[0].get("float_points", 6))
    except (TypeError, ValueError):
        float_points = 6.0
    for node, cards in sorted(facts.card_pods.items()):
        gpus = {g.uuid: g for g in facts.observations[node].gpus}
        for uuid, placed in sorted(cards.items()):
            holders = [(p, how) for p, how in placed if p.phase == "Running" and not p.terminating
                       and p.gpu.get(QGPU_CORE)]
            g = gpus.get(uuid)
            util = g.utilization_gpu if g is not None else None
            quota = sum(p.gpu.get(QGPU_CORE, 0.0) for p, _ in holders)
            if g is None or util is None or quota <= 0 or quota >= 100 or util <= quota:
                continue
            over = util - quota
            if over > float_points:
                continue
            refs = ", ".join(p.ref for p, _ in holders)
            yield QGPU_CORE_OVER_QUOTA.detect(
                node_subject(node),
                {
                    "node": node,
                    "pod": refs,
                    "utilization": fmt_num(util),
                    "core_quota": fmt_num(quota),
                },
                evidence=[
                    f"{node} {card_label(g)}: utilisation {fmt_num(util)}% against qgpu-core quota "
                    f"{fmt_num(quota)}% of {refs} (+{fmt_num(over)} points; normal float up to "
                    f"+{fmt_num(float_points)})",
                    *sorted({how for _, how in holders}),
                ],
            )


CHECK = Check(
    name="card.qgpu_over_quota",
    reads=("card_pods", "observations"),
    emits=(QGPU_CORE_OVER_QUOTA,),
    run=run,
    tables=("qgpu_quota",),
)
