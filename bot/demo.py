"""``gpubot demo``: the bot on the bundled scenarios, each a freshly started simulated cluster.

Shows what a user sees in Slack, as terminal text: the diagnosis of a zombie checkpoint, of a
missing qGPU namespace policy, of an untolerated taint, and the per-node physical view. Then the
remediation loop on one simulator: the zombie diagnosis, the offered ``checkpoint.clear``, an
approver's confirmed run, the diagnosis again without CHECKPOINT_ZOMBIE, and the audit trail.
"""

from __future__ import annotations

import asyncio
import json

from bot.commands import parse_invocation
from bot.console.render_text import render_text
from bot.console.scenario_files import bundled_scenario_dir
from bot.oneshot import run_invocation
from bot.settings import load_settings

SCENARIO_DIR = bundled_scenario_dir()

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


#: who offers and who approves in the remediation demo (Slack user ids)
DEMO_REQUESTER, DEMO_APPROVER = "U0ALICE", "U0ONCALL"


async def _remediation_loop(as_json: bool) -> None:
    from bot.remediation import RemediationService
    from bot.remediation.audit import format_audit
    from bot.service import Service
    from bot.sim.cluster import SimCluster

    line = "why-pending gpu-full-5d8c6-q7wz2 -n ai"
    inv = parse_invocation(line.split())
    async with SimCluster.from_file(SCENARIO_DIR / "zombie-checkpoint.yaml") as sim:
        settings = sim.settings(approvers={"checkpoint.clear": (DEMO_APPROVER,)}, node_ready_timeout_s=30)
        service = Service(settings)
        rem = RemediationService(settings, service.clients)
        try:
            before = await service.run(inv)
            offers = [
                (f, r) for f in before.findings if f.code == "CHECKPOINT_ZOMBIE"
                for r in f.remediations if r.action == "checkpoint.clear"
            ]
            outcomes = []
            for finding, remedy in offers:
                record = await rem.offer(remedy.action, remedy.params, cluster="", requested_by=DEMO_REQUESTER,
                                         finding_code=finding.code)
                if record is not None:
                    outcomes.append((record, await rem.click(record.id, DEMO_APPROVER)))
            after = await service.run(inv)
            trail = rem.flow.audit.query()
        finally:
            await service.close()
    if as_json:
        print(json.dumps({"remediation_demo": {
            "before": before.codes(), "after": after.codes(),
            "runs": [{"action": r.action, "target": r.target, "status": o.status, "steps": list(o.steps)}
                     for r, o in outcomes],
            "audit": [e.to_dict() for e in trail],
        }}, ensure_ascii=False))
        return
    print(f"\n### Remediation: clear the zombie checkpoint behind a confirmation\n$ gpubot {line}\n")
    print(render_text(before))
    for record, outcome in outcomes:
        print(f"offered by <@{DEMO_REQUESTER}>: {record.action} {record.target} (offer {record.id[:8]}…); "
              f"<@{DEMO_APPROVER}> clicks it:")
        print("".join(f"  {i}. {s}\n" for i, s in enumerate(outcome.steps, start=1)) + f"  => {outcome.message}\n")
    print(f"$ gpubot {line}   (again)\n")
    print(render_text(after))
    print("$ gpubot audit\n" + format_audit(trail, False))


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
    await _remediation_loop(as_json)
    return 0


def run_demo(*, as_json: bool = False) -> int:
    return asyncio.run(_run_all(as_json))
