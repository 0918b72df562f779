"""Losing a replica: the other takes over leadership, sweeps, and a node action cut off mid-way.

Two real ``gpubot serve`` processes on ``state: kubernetes`` with a 3 s leader lease and a 3 s
action lease. A replica is killed with SIGKILL (no shutdown, no release: a lost node), and the
test checks what a person would: who holds the ``gpubot-leader`` Lease and how soon, that the
offer sweep runs again, and that a node left cordoned with its kubelet stopped is restored by
the survivor and the audit trail says so.
"""

from __future__ import annotations

import asyncio
import signal
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.remediation.flow import ConfirmFlow
from bot.remediation.policy import ApproverPolicy
from bot.state.kube_watch import KubeProblemStore
from tests.actions.conftest import APPROVER, ZOMBIE_NODE
from tests.faults.conftest import checkpoint_kept, end_state
from tests.replicas.rig import Replica, ReplicaRig, replica_rig

LEASE_S = 3.0
STOP = "systemctl stop kubelet"
WATCH_CHANNEL = "C0WATCH"


async def current_leader(rig: ReplicaRig) -> str:
    async def held() -> str:
        identity = await rig.leader_identity()
        return identity if rig.replica_of(identity) is not None else ""

    result: str = await rig.wait_for(held, timeout=30)
    return result


def watch_posts(rig: ReplicaRig) -> list[str]:
    """The text of every new message the watch posted (edits and thread replies are not posts)."""
    return [
        str(c.body.get("text"))
        for c in rig.mock.of("chat.postMessage")
        if c.body.get("channel") == WATCH_CHANNEL and not c.body.get("thread_ts")
    ]


def sweeps_logged(replica: Replica) -> int:
    return replica.log.read_text(encoding="utf-8", errors="replace").count('"watch sweep"')


async def test_killing_the_leader_hands_leadership_sweeps_and_posting_to_the_other_in_time(tmp_path: Path) -> None:
    watch = [{"cluster": "sim", "channel": WATCH_CHANNEL, "enabled": True, "interval_s": 1.0}]
    async with replica_rig(tmp_path, name="leak", watch=watch) as rig:
        first = await current_leader(rig)
        problems = KubeProblemStore(rig.kube)

        async def posted() -> int:
            return len(watch_posts(rig)) if await rig.io(problems.open_problems, "sim", WATCH_CHANNEL) else 0

        await rig.wait_for(posted, timeout=60)
        leader = rig.replica_of(first)
        assert leader is not None
        # what follows runs on the loop serve picks where uvloop is installed (bot/event_loop.py)
        assert all('"event_loop": "uvloop"' in r.log.read_text() for r in rig.replicas)
        survivor = next(r for r in rig.replicas if r is not leader)
        # an offer that runs out while nobody leads: only the next leader's sweep can expire it
        short = ConfirmFlow(rig.store, rig.audit, ApproverPolicy({"*": (APPROVER,)}, False), ttl_s=1)
        offer = await rig.io(short.offer, "node.cordon", {"node": ZOMBIE_NODE}, rig.sim.cluster_name, "U0A", "C0GPU")
        rig.kill(leader)
        killed_at = time.monotonic()

        async def taken_over() -> str:
            identity = await rig.leader_identity()
            return identity if identity not in ("", first) else ""

        second = await rig.wait_for(taken_over, timeout=LEASE_S + 10, every=0.05)
        took_s = time.monotonic() - killed_at
        assert rig.replica_of(second) is survivor
        print(f"leader taken over {took_s:.2f}s after the kill (lease {LEASE_S:.0f}s)")
        assert took_s <= LEASE_S + 2, f"took over after {took_s:.1f}s"

        async def expired() -> list[Any]:
            # the sweep marks the offer expired, then audits it: a read between the two writes
            # sees the state without its trail entry, so the round is settled when both are in
            record = await rig.io(rig.store.get, offer.id)
            if record is None or record.state != "expired":
                return []
            trail = await rig.trail(offer.id)
            return trail if len(trail) >= 2 else []

        trail = await rig.wait_for(expired, timeout=10)
        assert [e.event for e in trail] == ["offer", "expire"] and trail[-1].actor == "gpubot"
        # the survivor now sweeps the watch too; it knows what the old leader posted
        swept = sweeps_logged(survivor)

        async def swept_twice() -> bool:
            return sweeps_logged(survivor) >= swept + 2

        await rig.wait_for(swept_twice, timeout=20)
        texts = watch_posts(rig)
        open_now = await rig.io(problems.open_problems, "sim", WATCH_CHANNEL)
        assert texts and len(texts) == len(set(texts)) == len(open_now), texts
        assert survivor.alive()


async def test_a_node_action_cut_off_by_a_lost_replica_is_restored_by_the_other(tmp_path: Path) -> None:
    async with replica_rig(tmp_path) as rig:
        sim = rig.sim
        original = sim.ssh.state(ZOMBIE_NODE).checkpoint or ""
        sim.ssh.state(ZOMBIE_NODE).latency_ms = 400  # every node command takes a while: room to cut in
        offer_id = await rig.offer("checkpoint.clear", {"node": ZOMBIE_NODE})
        await rig.clicks(offer_id, 1)

        async def kubelet_stopped() -> bool:
            return sim.ssh.history(ZOMBIE_NODE) == [STOP]

        await rig.wait_for(kubelet_stopped, timeout=60, every=0.02)
        record = await rig.io(rig.store.get, offer_id)
        assert record is not None and record.state == "running" and record.owner
        runner = rig.replica_of(record.owner)
        assert runner is not None
        rig.kill(runner)  # mid-action: node cordoned, kubelet stopped, checkpoint not yet moved
        survivor = next(r for r in rig.replicas if r is not runner)

        async def ended() -> str:
            current = await rig.io(rig.store.get, offer_id)
            return current.state if current is not None and current.state != "running" else ""

        assert await rig.wait_for(ended, timeout=60) == "interrupted"
        final = await rig.io(rig.store.get, offer_id)
        assert final is not None and rig.replica_of(final.owner or "") is survivor
        assert end_state(sim) == ("active", False)  # kubelet running again, node schedulable
        assert checkpoint_kept(sim, original)

        async def audited() -> bool:
            # the record is finished first, then the trail is written: a moment apart
            return (await rig.trail(offer_id))[-1].event == "interrupted"

        await rig.wait_for(audited, timeout=10, every=0.05)
        trail = await rig.trail(offer_id)
        last = trail[-1]
        assert (last.event, last.actor, last.outcome) == ("interrupted", "gpubot", "interrupted"), [
            (e.id, e.event, e.outcome, e.detail.get("step")) for e in trail
        ]
        assert "the process running it stopped" in str(last.detail["reason"])
        assert "schedulable" in str(last.detail["restore"]) and last.detail["approved_by"] == APPROVER
        restored = [e for e in trail if e.event == "step" and "restore" in str(e.detail.get("step"))]
        assert restored, [(e.event, e.detail) for e in trail]
        assert final.finished_at is not None and final.finished_at - final.created_at < timedelta(minutes=5)


async def test_a_leader_shut_down_gracefully_hands_the_lease_over_at_once(tmp_path: Path) -> None:
    async with replica_rig(tmp_path, leader_lease_s=15.0) as rig:
        first = await current_leader(rig)
        leader = rig.replica_of(first)
        assert leader is not None
        # what follows runs on the loop serve picks where uvloop is installed (bot/event_loop.py)
        assert all('"event_loop": "uvloop"' in r.log.read_text() for r in rig.replicas)
        survivor = next(r for r in rig.replicas if r is not leader)
        leader.proc.send_signal(signal.SIGTERM)  # a rolling update: it releases the Lease first
        stopped_at = time.monotonic()

        async def taken_over() -> str:
            identity = await rig.leader_identity()
            return identity if identity not in ("", first) else ""

        second = await rig.wait_for(taken_over, timeout=30, every=0.05)
        took_s = time.monotonic() - stopped_at
        print(f"graceful handover after {took_s:.2f}s (lease 15s)")
        assert rig.replica_of(second) is survivor
        assert took_s < 15, "the survivor waited the lease out: the Lease was not given up"
        assert await asyncio.to_thread(leader.proc.wait, 30) == 0
