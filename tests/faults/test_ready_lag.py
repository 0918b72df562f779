"""4. A Ready condition that stays True after the kubelet stops.

On a real cluster the node controller marks Ready Unknown only after the node-monitor grace
period (about 40 s), so right after a kubelet restart Ready=True is the old kubelet's. Before,
"wait for Ready" passed at once on it. Now the wait needs a heartbeat newer than the one read
just before the restart (the node Lease's renewTime, else Ready's lastHeartbeatTime). The
simulator lags like a real cluster here: Ready stays True for 40 s after a stop and the
restarted kubelet posts its first heartbeat only after a delay.
"""

from __future__ import annotations

import asyncio

from tests.faults.conftest import NODE, Rig, end_state, offer

UNCORDON = {"spec": {"unschedulable": False}}


def uncordon_time(sim: object) -> float:
    writes = [w for w in sim.api.writes if w.verb == "PATCH" and w.body == UNCORDON]  # type: ignore[attr-defined]
    assert len(writes) == 1
    return float(writes[0].time)


async def test_uncordon_waits_for_a_heartbeat_newer_than_the_restart(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        sim.api.lifecycle.grace_s = 40.0  # Ready stays True long after a stop
        sim.api.lifecycle.heartbeat_delay_s[NODE] = 1.0  # the new kubelet posts after a second
        for action in ("kubelet.restart", "checkpoint.clear"):
            sim.api.writes.clear()
            before = len(sim.api.lifecycle.heartbeats)
            out = await rem.click(await offer(rem, action), "U0BOB")
            assert out.status == "succeeded", out.message
            [(posted, node)] = sim.api.lifecycle.heartbeats[before:]
            assert node == NODE
            # Ready was True all along; only the fresh heartbeat let the node go back to work
            assert uncordon_time(sim) >= posted
            wait = next(s for s in out.steps if s.startswith(f"ok: wait for node {NODE} Ready"))
            assert "lease renewed" in wait
            assert end_state(sim) == ("active", False)


async def test_no_heartbeat_after_the_restart_leaves_the_node_cordoned_and_says_why(node_rig: Rig) -> None:
    async with node_rig(node_ready_timeout_s=1.0) as (sim, rem):
        sim.api.lifecycle.grace_s = 40.0
        sim.api.lifecycle.heartbeat_delay_s[NODE] = 3600.0  # the kubelet runs but never posts
        out = await rem.click(await offer(rem, "kubelet.restart"), "U0BOB")
        assert out.status == "failed"
        node = sim.api.store.find("Node", NODE)
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")  # type: ignore[index]
        assert ready["status"] == "True"  # the stale True that used to let it through
        assert end_state(sim) == ("active", True)
        assert "not Ready within 1s" in out.message and "before the restart" in out.message
        assert "CORDONED (cordoned by gpubot)" in out.message
        skipped = next(s for s in out.steps if s.startswith(f"skipped: restore: uncordon node {NODE}"))
        assert "no heartbeat since the kubelet was started" in skipped


async def test_a_stopped_kubelet_reads_unknown_once_the_grace_period_is_over(rig: Rig) -> None:
    async with rig() as (sim, _rem):
        sim.api.lifecycle.grace_s = 0.2
        sim.ssh.execute(NODE, "systemctl stop kubelet")
        node = sim.api.store.find("Node", NODE)
        assert next(c for c in node["status"]["conditions"] if c["type"] == "Ready")["status"] == "True"  # type: ignore[index]

        def ready() -> str:
            obj = sim.api.store.find("Node", NODE)
            return str(next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")["status"])  # type: ignore[index]

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while ready() != "Unknown":
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        sim.ssh.execute(NODE, "systemctl start kubelet")
        assert ready() == "True"
        lease = sim.api.store.find("Lease", NODE, "kube-node-lease")
        assert lease is not None and lease["spec"]["holderIdentity"] == NODE
