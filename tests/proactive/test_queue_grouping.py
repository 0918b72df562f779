"""Kueue workloads held by one ClusterQueue for one reason are one problem (pure functions)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.proactive.pending import PendingGroup, group_unadmitted, merge_queue_problems, namespace_of
from bot.proactive.problems import Problem, fingerprint


def _workload(name: str, owner_kind: str, api: str, queue: str = "team-a") -> dict:
    return {
        "metadata": {"name": f"x-{name}", "namespace": "ai", "creationTimestamp": "2026-05-07T10:00:00Z",
                     "ownerReferences": [{"apiVersion": api, "kind": owner_kind, "name": name, "controller": True}]},
        "spec": {"queueName": queue, "active": True},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False"}]},
    }


def test_unadmitted_custom_kinds_carry_their_cluster_queue() -> None:
    queues = [{"metadata": {"name": "team-a", "namespace": "ai"}, "spec": {"clusterQueue": "gpu-cq"}}]
    groups = group_unadmitted(
        [_workload("a", "MPIJob", "kubeflow.org/v2beta1"), _workload("b", "Job", "batch.volcano.sh/v1alpha1"),
         _workload("c", "JobSet", "jobset.x-k8s.io/v1alpha2", queue="missing")], queues)
    by_name = {g.pod: g for g in groups}
    assert by_name["a"].kind == "MPIJob" and by_name["a"].cluster_queue == "gpu-cq"
    assert by_name["b"].kind == "VcJob"
    assert by_name["c"].cluster_queue == ""  # a LocalQueue that does not exist: its own problem


def _problem(subject: str, label: str) -> tuple[Problem, str]:
    fp = fingerprint("c", "KUEUE_NOT_ADMITTED", subject)
    return Problem(fp, "c", "KUEUE_NOT_ADMITTED", "critical", subject, f"{label}: waits",
                   (f"{label}: Pending since", "why")), label


def test_one_problem_per_queue_naming_every_workload() -> None:
    merged = merge_queue_problems([_problem("queue/gpu-cq", "ai/MPIJob/a"), _problem("queue/gpu-cq", "ai/RayJob/b"),
                                   _problem("workload/ai/Job/c", "ai/Job/c")])
    assert len(merged) == 2
    queue = next(p for p in merged if p.subject == "queue/gpu-cq")
    assert queue.evidence[1] == "2 workloads wait in this queue for the same reason: ai/MPIJob/a, ai/RayJob/b"
    assert namespace_of("queue/gpu-cq") == "" and namespace_of("workload/ai/Job/c") == "ai"


def test_a_group_knows_its_queue() -> None:
    group = PendingGroup("ai", "workload/ai/MPIJob/a", "a", 0, datetime(2026, 5, 7, tzinfo=UTC), kind="MPIJob",
                         cluster_queue="gpu-cq")
    assert group.invocation("c").kind == "MPIJob"
