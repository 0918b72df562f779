"""pod.delete, qgpu.restart-manager, qgpu.rollout-restart and namespace.label against the simulated
API: the exact write each sends, and the precondition that stops a stale button."""

from __future__ import annotations

import re

from tests.actions.conftest import Rig, api_writes, cluster_writes, offer_and_click, state_changes

MANAGER = ("qgpu", "qgpu-manager-7xk2p", "5a4b3c2d-0000-4000-8000-0000000000e1")
POLICY = "tke.cloud.tencent.com/qgpu-schedule-policy"


async def test_pod_delete_is_graceful_with_the_uid_it_checked(rig: Rig) -> None:
    async with rig("zombie-checkpoint") as (sim, rem):
        out = await offer_and_click(rem, "pod.delete", {"namespace": "ai", "pod": "gpu-full-5d8c6-q7wz2"})
        assert out.status == "succeeded", out.message
        (write,) = cluster_writes(sim)
        assert (write.verb, write.path) == ("DELETE", "/api/v1/namespaces/ai/pods/gpu-full-5d8c6-q7wz2")
        assert write.grace_period_seconds == 30
        assert write.body["gracePeriodSeconds"] == 30
        assert write.body["preconditions"]["uid"] == "000000c9-7a1e-4c2b-9d3f-0000000000c9"
        assert "propagationPolicy" not in write.body
        assert state_changes(sim) == {}


async def test_pod_delete_refused_when_the_pod_is_gone(rig: Rig) -> None:
    async with rig("zombie-checkpoint") as (sim, rem):
        out = await offer_and_click(rem, "pod.delete", {"namespace": "ai", "pod": "no-such-pod"})
        assert out.status == "precondition_failed"
        assert "no longer exists" in out.message
        assert api_writes(sim) == []


async def test_restart_manager_deletes_only_the_manager_pod_on_that_node(rig: Rig) -> None:
    async with rig("zombie-checkpoint") as (sim, rem):
        out = await offer_and_click(rem, "qgpu.restart-manager", {"node": "tcs-10-29-25-5"})
        assert out.status == "succeeded", out.message
        (write,) = cluster_writes(sim)
        ns, name, uid = MANAGER
        assert (write.verb, write.path) == ("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}")
        assert write.grace_period_seconds == 30 and write.body["preconditions"]["uid"] == uid
        assert sim.api.store.find("Pod", "qgpu-manager-m9q4d", "qgpu") is not None


async def test_restart_manager_refused_on_a_node_without_one(rig: Rig) -> None:
    async with rig("untolerated-taint") as (sim, rem):
        # standard NVIDIA device plugin: no qGPU component anywhere
        bare = next(o["metadata"]["name"] for o in sim.scenario.objects if o.get("kind") == "Node")
        out = await offer_and_click(rem, "qgpu.restart-manager", {"node": bare})
        assert out.status == "precondition_failed" and "no live qgpu-manager pod" in out.message
        assert api_writes(sim) == []


async def test_rollout_restart_sets_restarted_at_on_every_qgpu_daemonset(rig: Rig) -> None:
    async with rig("zombie-checkpoint") as (sim, rem):
        out = await offer_and_click(rem, "qgpu.rollout-restart", {})
        assert out.status == "succeeded", out.message
        (write,) = cluster_writes(sim)
        assert (write.verb, write.path) == ("PATCH", "/apis/apps/v1/namespaces/qgpu/daemonsets/qgpu-manager")
        assert write.content_type == "application/strategic-merge-patch+json"
        stamp = write.body["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
        served = sim.api.store.find("DaemonSet", "qgpu-manager", "qgpu")
        assert served["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] == stamp


async def test_namespace_label_sets_the_policy_once(rig: Rig) -> None:
    async with rig("ns-policy-missing") as (sim, rem):
        params = {"namespace": "ml-team", "label": POLICY, "value": "fixed-share"}
        out = await offer_and_click(rem, "namespace.label", params)
        assert out.status == "succeeded", out.message
        (write,) = cluster_writes(sim)
        assert (write.verb, write.path, write.body) == (
            "PATCH",
            "/api/v1/namespaces/ml-team",
            {"metadata": {"labels": {POLICY: "fixed-share"}}},
        )
        labels = sim.api.store.find("Namespace", "ml-team")["metadata"]["labels"]
        assert labels[POLICY] == "fixed-share" and labels["kubernetes.io/metadata.name"] == "ml-team"
        again = await offer_and_click(rem, "namespace.label", params)
        assert again.status == "precondition_failed" and "already has" in again.message
        assert len(cluster_writes(sim)) == 1


async def test_namespace_label_copies_only_the_missing_labels(rig: Rig) -> None:
    async with rig("ns-policy-missing") as (sim, rem):
        out = await offer_and_click(rem, "namespace.label", {"namespace": "ml-team", "copy_from": "ai"})
        assert out.status == "succeeded", out.message
        source = sim.api.store.find("Namespace", "ai")["metadata"]["labels"]
        (write,) = cluster_writes(sim)
        copied = write.body["metadata"]["labels"]
        assert copied == {k: v for k, v in source.items() if k != "kubernetes.io/metadata.name"}
        assert copied
