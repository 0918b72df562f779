"""The batch-queue checks (Kueue, Volcano, KAI) on hand-built queue facts."""

from __future__ import annotations

from typing import Any

from bot.engine.queue_facts import GangFacts, KueueFacts, QueueFacts
from tests.facts import codes, node, only, pod, run, slim

Obj = dict[str, Any]
JOB: Obj = {"kind": "Job", "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"suspend": True, "parallelism": 1}, "status": {}}


def pod_group(min_member: int = 2, phase: str = "Pending", conditions: list[Obj] | None = None) -> Obj:
    return {"metadata": {"name": "pg"}, "spec": {"minMember": min_member, "minResources": {"nvidia.com/gpu": "8"}},
            "status": {"phase": phase, "conditions": conditions or []}}


def gang(system: str, *, queue: Obj | None, group: Obj | None, pods: list[Obj]) -> GangFacts:
    return GangFacts(system, "pg", pod_group=group, queue_name="q", queue=queue, pods=pods)


def condition(kind: str, status: str, reason: str = "", message: str = "") -> Obj:
    return {"type": kind, "status": status, "reason": reason, "message": message}


# ------------------------------------------------------------------ queue.volcano


def test_volcano_missing_podgroup_closed_queue_and_over_capability() -> None:
    members = [pod("a", gpu=4), pod("b", gpu=4)]
    no_group = QueueFacts(volcano=gang("volcano", queue=None, group=None, pods=members))
    assert codes("queue.volcano", pod=members[0], queues=no_group) == ["VOLCANO_PODGROUP_MISSING"]
    closed = QueueFacts(volcano=gang("volcano", queue={"status": {"state": "Closed"}}, group=pod_group(),
                                     pods=members))
    d = only("queue.volcano", pod=members[0], queues=closed)
    assert d.code == "VOLCANO_QUEUE_CLOSED" and d.params["queue_state"] == "Closed" and d.params["group"] == "pg"
    full = {"spec": {"capability": {"nvidia.com/gpu": "8"}},
            "status": {"state": "Open", "allocated": {"nvidia.com/gpu": "4"}}}
    over = QueueFacts(volcano=gang("volcano", queue=full, group=pod_group(), pods=members))
    assert codes("queue.volcano", pod=members[0], queues=over) == ["VOLCANO_QUEUE_OVER_CAPABILITY"]


def test_volcano_gang_that_cannot_fit_on_the_nodes() -> None:
    members = [pod("a", gpu=8), pod("b", gpu=8)]
    g = gang("volcano", queue={"status": {"state": "Open"}}, group=pod_group(), pods=members)
    d = only("queue.volcano", pod=members[0], queues=QueueFacts(volcano=g), nodes=[node("n1", gpu=8)])
    assert d.code == "VOLCANO_GANG_UNSCHEDULABLE" and d.role == "gpu" and d.params["placed"] == "1"
    assert d.params["min_member"] == "2" and d.params["resource"] == "nvidia.com/gpu"


def test_volcano_short_gang_and_a_gang_that_fits() -> None:
    members = [pod("a", gpu=1)]
    g = gang("volcano", queue={"status": {"state": "Open"}}, group=pod_group(min_member=3), pods=members)
    assert only("queue.volcano", pod=members[0], queues=QueueFacts(volcano=g)).role == "short"
    fits = gang("volcano", queue={"status": {"state": "Open"}}, group=pod_group(), pods=[pod("a"), pod("b")])
    assert run("queue.volcano", pod=pod("a"), queues=QueueFacts(volcano=fits), nodes=[node("n1")],
               node_pods={"n1": [slim("x", "n1", gpu=2)]}) == []


def test_volcano_nothing_for_a_running_pod_or_without_volcano() -> None:
    g = gang("volcano", queue=None, group=None, pods=[])
    assert run("queue.volcano", pod=pod(node="n", phase="Running"), queues=QueueFacts(volcano=g)) == []
    assert run("queue.volcano", pod=pod()) == []


# ------------------------------------------------------------------ queue.kai


def kai_queue(limit: str = "-1", quota: str = "-1", weight: str = "1", allocated: str = "0") -> Obj:
    return {"metadata": {"name": "q"}, "spec": {"resources": {"gpu": {"quota": quota, "limit": limit,
                                                                       "overQuotaWeight": weight}}},
            "status": {"allocated": {"nvidia.com/gpu": allocated}}}


def test_kai_missing_queue_and_a_limit_reached() -> None:
    members = [pod("a", gpu=4)]
    missing = QueueFacts(kai=gang("kai", queue=None, group=pod_group(1), pods=members))
    assert codes("queue.kai", pod=members[0], queues=missing) == ["KAI_QUEUE_MISSING"]
    limited = QueueFacts(kai=gang("kai", queue=kai_queue(limit="8", allocated="6"), group=pod_group(1), pods=members))
    d = only("queue.kai", pod=members[0], queues=limited)
    assert d.code == "KAI_QUEUE_OVER_LIMIT" and d.role == "limit"


def test_kai_quota_without_over_quota_weight_and_a_gang_that_does_not_fit() -> None:
    members = [pod("a", gpu=4)]
    quota = QueueFacts(kai=gang("kai", queue=kai_queue(quota="4", weight="0", allocated="2"), group=pod_group(1),
                                pods=members))
    assert only("queue.kai", pod=members[0], queues=quota).role == "quota"
    big = [pod("a", gpu=8), pod("b", gpu=8)]
    g = QueueFacts(kai=gang("kai", queue=kai_queue(), group=pod_group(2), pods=big))
    assert codes("queue.kai", pod=big[0], queues=g, nodes=[node("n1", gpu=8)]) == ["KAI_GANG_UNSCHEDULABLE"]


def test_kai_room_and_fit_say_nothing() -> None:
    members = [pod("a", gpu=1)]
    g = QueueFacts(kai=gang("kai", queue=kai_queue(limit="8"), group=pod_group(1), pods=members))
    assert run("queue.kai", pod=members[0], queues=g, nodes=[node("n1")]) == []


# ------------------------------------------------------------------ queue.kueue

LQ: Obj = {"metadata": {"name": "lq", "namespace": "ml"}, "spec": {"clusterQueue": "cq"}}
CQ: Obj = {"metadata": {"name": "cq"}, "spec": {}, "status": {"conditions": [condition("Active", "True")]}}


def test_kueue_not_installed_and_missing_queues() -> None:
    assert codes("queue.kueue", kind="Job", name="train", workload=JOB,
                 queues=QueueFacts(kueue=KueueFacts("lq", installed=False))) == ["KUEUE_NOT_INSTALLED"]
    d = only("queue.kueue", kind="Job", name="train", workload=JOB, queues=QueueFacts(kueue=KueueFacts("lq")))
    assert d.code == "KUEUE_QUEUE_MISSING" and d.role == "local" and d.params["name"] == "lq"
    d = only("queue.kueue", kind="Job", name="train", workload=JOB,
             queues=QueueFacts(kueue=KueueFacts("lq", local_queue=LQ)))
    assert d.role == "cluster" and d.params["name"] == "cq"


def test_kueue_stopped_queue_and_missing_workload() -> None:
    stopped = {**CQ, "spec": {"stopPolicy": "Hold"}}
    d = only("queue.kueue", kind="Job", name="train", workload=JOB,
             queues=QueueFacts(kueue=KueueFacts("lq", local_queue=LQ, cluster_queue=stopped)))
    assert d.code == "KUEUE_CLUSTERQUEUE_STOPPED" and d.params["value"] == "Hold" and d.params["cluster_queue"] == "cq"
    d = only("queue.kueue", kind="Job", name="train", workload=JOB,
             queues=QueueFacts(kueue=KueueFacts("lq", local_queue=LQ, cluster_queue=CQ)))
    assert d.code == "KUEUE_WORKLOAD_MISSING"


def test_kueue_not_admitted_evicted_and_admitted() -> None:
    wl = {"metadata": {"name": "job-train"}, "status": {"conditions": [
        condition("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set main: insufficient quota "
                  "for nvidia.com/gpu in flavor default, request > maximum capacity (16 > 8)")]}}
    k = KueueFacts("lq", workload=wl, local_queue=LQ, cluster_queue=CQ)
    d = only("queue.kueue", kind="Job", name="train", workload=JOB, queues=QueueFacts(kueue=k))
    assert d.code == "KUEUE_NOT_ADMITTED" and d.params["name"] == "job-train"
    evicted = {"metadata": {"name": "job-train"}, "status": {"conditions": [
        condition("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload")]}}
    k = KueueFacts("lq", workload=evicted, local_queue=LQ, cluster_queue=CQ)
    d = only("queue.kueue", kind="Job", name="train", workload=JOB, queues=QueueFacts(kueue=k))
    assert d.code == "KUEUE_EVICTED" and d.params["reason"] == "Preempted"
    admitted = {"metadata": {"name": "job-train"}, "status": {"conditions": [condition("Admitted", "True")],
                                                               "admission": {"clusterQueue": "cq"}}}
    k = KueueFacts("lq", workload=admitted, local_queue=LQ, cluster_queue=CQ)
    d = only("queue.kueue", kind="Job", name="train", workload=JOB, queues=QueueFacts(kueue=k))
    assert d.code == "KUEUE_ADMITTED" and d.params["cluster_queue"] == "cq" and d.params["what"]


def test_kueue_nothing_for_a_target_kueue_does_not_manage() -> None:
    assert run("queue.kueue", pod=pod()) == []
    # not installed and not suspended: the label alone is no evidence Kueue was meant to hold it
    assert run("queue.kueue", pod=pod(), queues=QueueFacts(kueue=KueueFacts("lq", installed=False))) == []
