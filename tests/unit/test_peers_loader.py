"""The peers loader reads the pods a pending pod's affinity is about, and, for a pod with no
rules of its own, only when the scheduler's newest message blames other pods' anti-affinity.

That message is worked out in a worker thread (sorting and dating every event of the pod: 20,000
of them stalled the event loop 0.15 s, and every Slack ack with it), so the test also runs the
loader on a real event loop and checks the parsed messages are kept for the checks.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from bot.engine.gather import Sources
from bot.engine.gather.kube import peers
from tests.facts import NS, event, facts, pod

BLAMED = "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
EXISTING = "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules."


class _Kube:
    """Records the pod lists the loader asks for and answers each with one running pod."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def list_pods(self, namespace: str, **params: Any) -> list[dict[str, Any]]:
        self.asked.append((namespace, params))
        return [pod("other", node="a", phase="Running", labels={"app": "trainer"})]


class _Sources:
    def __init__(self) -> None:
        self.kube = _Kube()


def _run(message: str, count: int = 1) -> tuple[list[Any], _Kube, Any]:
    target = pod(labels={"app": "trainer"})
    when = [f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z" for i in range(count)]
    f = facts(pod=target, events=[event(message if i == count - 1 else BLAMED, when=w) for i, w in enumerate(when)],
              only=("target", "events"))
    src = _Sources()
    asyncio.run(peers(f, cast(Sources, src)))
    return f.peers, src.kube, f


def test_a_pod_without_rules_reads_peers_when_the_newest_message_blames_existing_pods() -> None:
    found, kube, f = _run(EXISTING, count=300)
    assert [namespace for namespace, _ in kube.asked] == [NS]  # the pod's own namespace, once
    assert [p["metadata"]["name"] for p in found] == ["other"]
    # the newest message was parsed once, in the thread, and is what the checks read
    assert f.events.scheduling[0].reasons[0].category == "existing_anti_affinity"


def test_a_pod_without_rules_reads_nothing_when_the_scheduler_blames_something_else() -> None:
    found, kube, _ = _run("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    assert found == [] and kube.asked == []
