"""The issue-32 additions on hand-built Facts: a KAI parent queue's limit, an admitted Kueue job
still suspended, a DRA selector no device matches and a claim reserved for a gone pod."""

from __future__ import annotations

from typing import Any

from bot.engine.queue_facts import DraFacts, GangFacts, KueueFacts, QueueFacts
from tests.facts import codes, only, pod

Obj = dict[str, Any]
DRIVER = "gpu.nvidia.com"


def _kai(name: str, *, limit: str, allocated: str, parent: str = "") -> Obj:
    spec: Obj = {"resources": {"gpu": {"quota": "-1", "limit": limit, "overQuotaWeight": "1"}}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocated": {"nvidia.com/gpu": allocated}}}


def test_a_full_kai_parent_holds_back_a_child_with_room() -> None:
    member = pod("a", gpu=2)
    group = {"metadata": {"name": "pg"}, "spec": {"minMember": 1}, "status": {}}
    g = GangFacts("kai", "pg", pod_group=group, queue_name="team-b", pods=[member],
                  queue=_kai("team-b", limit="-1", allocated="4", parent="root"),
                  parents=[_kai("root", limit="8", allocated="8")])
    d = only("queue.kai", pod=member, queues=QueueFacts(kai=g))
    assert d.code == "KAI_PARENT_QUEUE_OVER_LIMIT" and d.params["parent"] == "root" and d.role == "limit"
    roomy = GangFacts("kai", "pg", pod_group=group, queue_name="team-b", pods=[member],
                      queue=_kai("team-b", limit="-1", allocated="4", parent="root"),
                      parents=[_kai("root", limit="16", allocated="8")])
    assert "KAI_PARENT_QUEUE_OVER_LIMIT" not in codes("queue.kai", pod=member, queues=QueueFacts(kai=roomy))


def test_an_admitted_job_still_suspended_long_after() -> None:
    job: Obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml", "uid": "j1",
                "labels": {"kueue.x-k8s.io/queue-name": "lq"}}, "spec": {"suspend": True}, "status": {}}
    workload: Obj = {"metadata": {"name": "job-train-1", "namespace": "ml",
                                  "ownerReferences": [{"kind": "Job", "uid": "j1", "controller": True}]},
                     "status": {"admission": {"clusterQueue": "cq"}, "conditions": [
                         {"type": "Admitted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    k = KueueFacts("lq", workload=workload, local_queue={"spec": {"clusterQueue": "cq"}},
                   cluster_queue={"metadata": {"name": "cq"}})
    d = only("queue.kueue", kind="Job", name="train", namespace="ml", workload=job, owners=[job],
             queues=QueueFacts(kueue=k))
    assert d.code == "KUEUE_ADMITTED_STILL_SUSPENDED" and d.params["name"] == "job/train"
    running = {**job, "spec": {"suspend": False}}
    assert codes("queue.kueue", kind="Job", name="train", namespace="ml", workload=running, owners=[running],
                 queues=QueueFacts(kueue=k)) == ["KUEUE_ADMITTED"]


def _dra(*, selector: str, held_by_gone: bool) -> tuple[Obj, DraFacts]:
    target = pod("t", gpu=None, spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": "mine"}]})
    mine = {"metadata": {"name": "mine", "namespace": "default"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1,
                                    "selectors": [{"cel": {"expression": selector}}]}}]}}, "status": {}}
    slices = [{"spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1"}, "devices": [
        {"name": "gpu-0", "attributes": {"productName": {"string": "A100"}},
         "capacity": {"memory": {"value": "40Gi"}}}]}}]
    holder = {"metadata": {"name": "old", "namespace": "default"}, "status": {
        "allocation": {"devices": {"results": [{"driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "gone-pod", "uid": "u1"}]}}
    by_driver = {"spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
    dra = DraFacts(version="v1", claims={"mine": mine}, device_classes={"gpu": by_driver},
                   slices=slices, all_claims=[holder] if held_by_gone else [],
                   gone_reservations={"default/old": ["gone-pod"]} if held_by_gone else {})
    return target, dra


def _scheduler_said(target: Obj) -> list[Obj]:
    return [{"reason": "FailedScheduling", "message": "0/1 nodes are available: 1 cannot allocate all claims.",
             "involvedObject": {"kind": "Pod", "name": "t"}, "lastTimestamp": "2026-01-01T00:00:00Z"}]


def test_a_selector_no_device_matches() -> None:
    target, dra = _dra(selector='device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0',
                       held_by_gone=False)
    d = only("sched.dra_claims", pod=target, events=_scheduler_said(target), queues=QueueFacts(dra=dra))
    assert d.code == "DRA_SELECTOR_NO_MATCH" and "80Gi" in d.params["selector"]


def test_a_selector_that_cannot_be_evaluated_is_not_a_no_match() -> None:
    target, dra = _dra(selector='device.attributes["gpu.nvidia.com"].productName.size() > 2', held_by_gone=False)
    found = codes("sched.dra_claims", pod=target, events=_scheduler_said(target), queues=QueueFacts(dra=dra))
    assert "DRA_SELECTOR_NO_MATCH" not in found


def test_the_only_device_held_for_a_gone_pod() -> None:
    target, dra = _dra(selector='device.attributes["gpu.nvidia.com"].productName == "A100"', held_by_gone=True)
    d = only("sched.dra_claims", pod=target, events=_scheduler_said(target), queues=QueueFacts(dra=dra))
    assert d.code == "DRA_CLAIM_STALE_RESERVATION" and d.params["holder"] == "default/old"
    assert d.params["gone"] == "gone-pod"
