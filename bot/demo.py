"""``gpubot demo``: the bot on the bundled scenarios, each a freshly started simulated cluster.

Shows what a user sees in Slack, as terminal text: the diagnosis of a zombie checkpoint, of a
missing qGPU namespace policy, of an untolerated taint, and the per-node physical view.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot.cli import run_invocation
from bot.commands import parse_invocation
from bot.render_text import render_text
from bot.settings import load_settings

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"

#: (scenario file, command line, what it shows)
DEMO_STEPS: tuple[tuple[str, str, str], ...] = (
    (
        "zombie-checkpoint.yaml",
        "why-pending gpu-full-5d8c6-q7wz2 -n ai",
        "A whole-card qGPU pod is Pending although every card is idle",
    ),
    ("zombie-checkpoint.yaml", "node-status", "The same cluster, node by node: logical beside physical"),
    (
        "ns-policy-missing.yaml",
        "why-pending train-7b4d9-k2x8p -n ml-team",
        "A qGPU pod in a brand-new namespace never gets its slice",
    ),
    (
        "untolerated-taint.yaml",
        "why-pending bert-train-0 -n research",
        "Standard NVIDIA device plugin: GPU nodes are tainted",
    ),
)


async def _run_all(as_json: bool) -> int:
    settings = load_settings(env={})
    for scenario, line, what in DEMO_STEPS:
        inv = parse_invocation(line.split())
        report = await run_invocation(inv, settings, scenario=str(SCENARIO_DIR / scenario))
        if as_json:
            print(json.dumps(report.to_dict(), ensure_ascii=False))
            continue
        print(f"\n### {what}\n$ gpubot {line} --scenario scenarios/{scenario}\n")
        print(render_text(report))
    return 0


def run_demo(*, as_json: bool = False) -> int:
    return asyncio.run(_run_all(as_json))
