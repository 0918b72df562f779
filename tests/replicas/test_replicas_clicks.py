"""Two ``gpubot serve`` processes, one offer, fifty clicks spread over both: it runs once.

Acceptance of issue 17: the claim is a compare-and-swap on the ``GpuRemediation`` object, so
whichever replica a click reaches, exactly one wins; the proof is the cluster itself (the
simulator records every write: one PATCH of the node per offer) and the audit trail (one
``start``, one ``result``, forty-nine refusals). Repeated on a new offer each round, alternating
cordon and uncordon so every round's precondition holds.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import aiohttp

from bot.state.kube import object_name
from tests.actions.conftest import ZOMBIE_NODE
from tests.replicas.conftest import NAMESPACE
from tests.replicas.rig import replica_rig

ROUNDS = int(os.environ.get("GPUBOT_REPLICA_ROUNDS", "100"))
CLICKS = 50


def node_patches(writes: list[object]) -> int:
    return sum(
        1
        for w in writes
        if getattr(w, "verb", "") == "PATCH" and getattr(w, "path", "") == f"/api/v1/nodes/{ZOMBIE_NODE}"
    )


async def test_fifty_clicks_over_two_replicas_run_each_offer_exactly_once(tmp_path: Path) -> None:
    # 5,000 clicks log three INFO lines each (received, audited, answered): a tenth of the replicas'
    # CPU in this test, and nothing here reads them. The leader's sweeps list every request key,
    # one per click (5,000 by the last round): every second, as the rig has them for the failover
    # tests' expiries, they came to cost more than the clicks; every 10 s, several still run beside them
    async with (
        replica_rig(tmp_path, log_level="WARNING", offer_sweep_interval_s=10.0) as rig,
        aiohttp.ClientSession() as session,
    ):
        for n in range(ROUNDS):
            action = "node.cordon" if n % 2 == 0 else "node.uncordon"
            before = node_patches(rig.sim.api.writes)
            offer_id = await rig.offer(action, {"node": ZOMBIE_NODE})
            await rig.clicks(offer_id, CLICKS, session=session)

            async def settled(offer_id: str = offer_id) -> list[str] | None:
                # the offer's own object first, in the simulator's memory: until its one run has
                # ended the trail cannot be whole, and listing it (the simulator filters every
                # audit record by label, 5,000 of them by the last round) ten times a second cost
                # more CPU the longer a loaded machine made each round
                obj = rig.sim.api.store.find("GpuRemediation", object_name(offer_id), NAMESPACE) or {}
                if (obj.get("status") or {}).get("state") in (None, "pending", "running"):
                    return None  # (a run that ended otherwise is read and reported below)
                trail = await rig.trail(offer_id)
                events = [e.event for e in trail]
                # offer, approve, start, result and one refusal per losing click; the run's own step
                # rows do not count, or a round could be read before its last refusals are written
                decided = [e for e in events if e != "step"]
                return events if events.count("result") == 1 and len(decided) >= CLICKS + 3 else None

            events = Counter(await rig.wait_for(settled, timeout=120))
            assert events.pop("step", 0) >= 1, n  # the one run's steps, written before and after
            assert events == {"offer": 1, "approve": 1, "start": 1, "result": 1, "refuse": CLICKS - 1}, (n, events)
            assert node_patches(rig.sim.api.writes) == before + 1, n
            record = await rig.io(rig.store.get, offer_id)
            assert record is not None and record.state == "succeeded", (n, record)
            cordoned = bool((rig.sim.api.store.find("Node", ZOMBIE_NODE) or {}).get("spec", {}).get("unschedulable"))
            assert cordoned == (action == "node.cordon"), n
        # both replicas answered clicks (each had 25 a round), and neither died on the way
        assert all(r.alive() for r in rig.replicas)
