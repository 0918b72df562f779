"""The scheduling checks on hand-built facts: the case each scenario covers, its negative, and edges."""

from __future__ import annotations

from tests.facts import codes, event, node, only, pod, run

FIT = ("0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
       "2 No preemption victims found for incoming pod.")


# ------------------------------------------------------------------ sched.affinity


def test_affinity_a_node_selector_no_candidate_matches() -> None:
    p = pod(spec={"nodeSelector": {"gpu-type": "h100"}})
    d = only("sched.affinity", pod=p, nodes=[node("a", labels={"gpu-type": "a100"}), node("b")])
    assert d.code == "SCHED_NODE_SELECTOR_MISMATCH"
    assert d.params == {"pod": "ml/p", "selector": "gpu-type=h100"}
    assert len(d.evidence) == 2


def test_affinity_silent_when_one_candidate_matches_or_nothing_is_selected() -> None:
    p = pod(spec={"nodeSelector": {"gpu-type": "h100"}})
    assert run("sched.affinity", pod=p, nodes=[node("a", labels={"gpu-type": "h100"}), node("b")]) == []
    assert run("sched.affinity", pod=pod(), nodes=[node("a")]) == []


def test_affinity_ignores_a_running_pod_and_a_cluster_without_candidates() -> None:
    sel = {"nodeSelector": {"gpu-type": "h100"}}
    assert run("sched.affinity", pod=pod(spec=sel, node="a", phase="Running"), nodes=[node("a")]) == []
    assert run("sched.affinity", pod=pod(spec=sel), nodes=[node("cpu", gpu=None)]) == []


def test_affinity_required_node_affinity_is_named_as_such() -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]}
    p = pod(spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}})
    d = only("sched.affinity", pod=p, nodes=[node("a", labels={"zone": "z1"})])
    assert d.params["selector"] == "node affinity"


# ------------------------------------------------------------------ sched.cordoned


def test_cordoned_every_candidate_is_the_cause_with_one_uncordon_each() -> None:
    d = only("sched.cordoned", pod=pod(), nodes=[node("a", unschedulable=True), node("b", unschedulable=True)])
    assert d.code == "SCHED_UNSCHEDULABLE_NODE" and d.role == ""
    assert d.params["cordoned"] == [{"node": "a"}, {"node": "b"}]
    assert d.params["count"] == 2


def test_cordoned_some_candidates_is_partial_and_none_is_silent() -> None:
    d = only("sched.cordoned", pod=pod(), nodes=[node("a", unschedulable=True), node("b")])
    assert d.role == "partial" and d.params["nodes"] == "a"
    assert run("sched.cordoned", pod=pod(), nodes=[node("a"), node("b")]) == []


def test_cordoned_cpu_nodes_are_not_candidates_for_a_gpu_pod() -> None:
    assert run("sched.cordoned", pod=pod(), nodes=[node("cpu", gpu=None, unschedulable=True), node("g")]) == []


# ------------------------------------------------------------------ sched.node_health


def test_node_health_the_only_candidate_not_ready() -> None:
    d = only("sched.node_health", pod=pod(), nodes=[node("a", ready=False, ready_reason="NodeStatusUnknown")])
    assert (d.code, d.role) == ("NODE_NOT_READY", "only_candidate")
    assert d.params == {"node": "a", "reason": "NodeStatusUnknown"}


def test_node_health_one_of_several_and_all_ready() -> None:
    d = only("sched.node_health", pod=pod(), nodes=[node("a", ready=False), node("b")])
    assert d.role == "candidate"
    assert run("sched.node_health", pod=pod(), nodes=[node("a"), node("b")]) == []


def test_node_health_a_node_without_conditions_is_not_ready() -> None:
    bare = node("a")
    bare["status"].pop("conditions")
    assert only("sched.node_health", pod=pod(), nodes=[bare]).params["reason"] == "no Ready condition"


# ------------------------------------------------------------------ sched.not_advertised


def test_not_advertised_when_no_gpu_node_offers_the_resource() -> None:
    nodes = [node("g", gpu=0, labels={"nvidia.com/gpu.present": "true"}), node("cpu", gpu=None)]
    d = only("sched.not_advertised", pod=pod(), nodes=nodes, events=[event(FIT)])
    assert d.code == "GPU_RESOURCE_NOT_ADVERTISED"
    assert d.params["resource"] == "nvidia.com/gpu" and d.params["nodes"] == "g" and d.params["value"] == "nothing"
    assert any(line.startswith("scheduler: ") for line in d.evidence)


def test_not_advertised_names_what_the_nodes_offer_instead() -> None:
    nodes = [node("g", resource="nvidia.com/gpu.shared", gpu=4)]
    d = only("sched.not_advertised", pod=pod(), nodes=nodes)
    assert d.params["value"] == "nvidia.com/gpu.shared"


def test_not_advertised_silent_when_a_node_offers_it_or_the_pod_asks_no_gpu() -> None:
    assert run("sched.not_advertised", pod=pod(), nodes=[node("g")]) == []
    assert run("sched.not_advertised", pod=pod(gpu=None), nodes=[node("cpu", gpu=None)]) == []


def test_not_advertised_with_no_gpu_node_at_all_says_so() -> None:
    d = only("sched.not_advertised", pod=pod(), nodes=[node("cpu", gpu=None)])
    assert d.params["nodes"] == "none" and d.params["count"] == 0
    assert "no node looks like a GPU node" in d.evidence[-1]


# ------------------------------------------------------------------ sched.scheduler


def test_scheduler_a_named_scheduler_without_events_is_the_cause() -> None:
    p = pod(spec={"schedulerName": "volcano"}, annotations={"scheduling.k8s.io/group-name": "pg"})
    d = only("sched.scheduler", pod=p)
    assert d.code == "SCHED_NON_DEFAULT_SCHEDULER" and d.role == "cause"
    assert d.params["scheduler"] == "volcano" and d.params["what"] != "a scheduler other than kube-scheduler"
    assert "scheduling.k8s.io/group-name: pg" in d.evidence


def test_scheduler_with_current_events_is_context_and_default_is_silent() -> None:
    p = pod(spec={"schedulerName": "my-sched"})
    d = only("sched.scheduler", pod=p, events=[event(FIT, component="my-sched")])
    assert d.role == "" and d.params["what"] == "a scheduler other than kube-scheduler"
    assert run("sched.scheduler", pod=pod()) == []
    assert run("sched.scheduler", pod=pod(spec={"schedulerName": "default-scheduler"})) == []


# ------------------------------------------------------------------ sched.silence


def test_silence_a_pending_pod_without_scheduler_events() -> None:
    d = only("sched.silence", pod=pod(spec={"schedulerName": "x"}))
    assert d.code == "SCHED_NO_EVENTS" and "spec.schedulerName: x" in d.evidence


def test_silence_nothing_when_the_scheduler_spoke_or_the_pod_is_gated_or_placed() -> None:
    assert run("sched.silence", pod=pod(), events=[event(FIT)]) == []
    assert run("sched.silence", pod=pod(spec={"schedulingGates": [{"name": "g"}]})) == []
    assert run("sched.silence", pod=pod(node="a", phase="Running")) == []


def test_silence_words_about_an_earlier_pod_of_the_same_name_are_stale() -> None:
    old = event(FIT)
    old["involvedObject"]["uid"] = "uid-of-an-earlier-p"
    d = only("sched.silence", pod=pod(), events=[old])
    assert d.code == "SCHED_EVENTS_STALE" and d.params["why"] == "about an earlier pod of the same name"
    assert d.params["pod_name"] == "p" and d.params["namespace"] == "ml"


# ------------------------------------------------------------------ sched.events


def test_events_insufficient_gpu_with_the_request() -> None:
    d = only("sched.events", pod=pod(gpu=2), nodes=[node("a"), node("b")], events=[event(FIT)])
    assert d.code == "SCHED_INSUFFICIENT_GPU"
    assert d.params == {"pod": "ml/p", "resource": "nvidia.com/gpu", "count": 2, "requested": "2"}


def test_events_other_resources_pods_volume_and_unknown_reasons() -> None:
    msg = ("0/4 nodes are available: 1 Insufficient cpu, 1 Too many pods, "
           "1 node(s) had volume node affinity conflict, 1 frobnicated.")
    found = run("sched.events", pod=pod(), nodes=[node("a")], events=[event(msg)])
    got = {(d.code, d.params.get("resource")) for d in found}
    assert ("SCHED_INSUFFICIENT_OTHER", "cpu") in got and ("SCHED_INSUFFICIENT_OTHER", "pods") in got
    assert {"SCHED_VOLUME", "SCHED_UNRECOGNISED"} <= {d.code for d in found}


def test_events_shortage_only_on_nodes_without_the_gpu_is_not_a_shortage() -> None:
    # 1 of 2 nodes has no GPU at all and the scheduler counts it as Insufficient: that is no shortage
    msg = "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint {x: y}."
    assert "SCHED_INSUFFICIENT_GPU" not in codes(
        "sched.events", pod=pod(), nodes=[node("g"), node("cpu", gpu=None)], events=[event(msg)])


def test_events_nothing_without_events_or_for_a_placed_pod() -> None:
    assert run("sched.events", pod=pod(), nodes=[node("a")]) == []
    assert run("sched.events", pod=pod(node="a", phase="Running"), events=[event(FIT)]) == []


# ------------------------------------------------------------------ sched.taints

TAINT = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}


def test_taints_every_usable_node_tainted_gives_the_toleration() -> None:
    d = only("sched.taints", pod=pod(), nodes=[node("a", taints=[TAINT]), node("b", taints=[TAINT])])
    assert d.code == "SCHED_UNTOLERATED_TAINT"
    assert d.params["taint"] == "dedicated=ml:NoSchedule" and d.params["nodes"] == "a, b"
    assert "dedicated" in d.params["toleration"]


def test_taints_silent_when_one_node_is_free_or_the_pod_tolerates() -> None:
    assert run("sched.taints", pod=pod(), nodes=[node("a", taints=[TAINT]), node("b")]) == []
    tolerates = pod(spec={"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    assert run("sched.taints", pod=tolerates, nodes=[node("a", taints=[TAINT])]) == []


def test_taints_a_cordon_or_not_ready_taint_is_left_to_their_own_checks() -> None:
    cordon = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    assert run("sched.taints", pod=pod(), nodes=[node("a", taints=[cordon])]) == []


def test_taints_only_the_nodes_the_selector_allows_count() -> None:
    p = pod(spec={"nodeSelector": {"pool": "ml"}})
    nodes = [node("a", labels={"pool": "ml"}, taints=[TAINT]), node("b")]
    d = only("sched.taints", pod=p, nodes=nodes)
    assert d.params["nodes"] == "a" and "only nodes it can use" in d.evidence[-1]


# ------------------------------------------------------------------ sched.pod_affinity

ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "trainer"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def test_pod_affinity_anti_affinity_against_a_pod_on_every_node() -> None:
    p = pod(labels={"app": "trainer"}, spec={"affinity": ANTI})
    peers = [pod("t1", node="a", phase="Running", labels={"app": "trainer"}),
             pod("t2", node="b", phase="Running", labels={"app": "trainer"})]
    d = only("sched.pod_affinity", pod=p, nodes=[node("a"), node("b")], peers=peers)
    assert d.code == "SCHED_POD_AFFINITY" and d.role == ""
    assert d.params["count"] == 2 and d.params["nodes"] == "none"


def test_pod_affinity_a_node_left_is_partial_and_no_terms_is_silent() -> None:
    p = pod(labels={"app": "trainer"}, spec={"affinity": ANTI})
    peers = [pod("t1", node="a", phase="Running", labels={"app": "trainer"})]
    d = only("sched.pod_affinity", pod=p, nodes=[node("a"), node("b")], peers=peers)
    assert d.role == "partial" and d.params["nodes"] == "b"
    assert run("sched.pod_affinity", pod=pod(), nodes=[node("a")]) == []


def test_pod_affinity_trusts_the_scheduler_when_it_cannot_find_the_pods() -> None:
    msg = "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    d = only("sched.pod_affinity", pod=pod(), nodes=[node("a"), node("b")], events=[event(msg)])
    assert d.role == "" and "could not be identified" in d.params["reason"]


# ------------------------------------------------------------------ sched.autoscaler

NO_SCALE_UP = ("pod didn't trigger scale-up (it wouldn't fit if a new node is added): 2 Insufficient nvidia.com/gpu, "
               "1 max node group size reached")


def test_autoscaler_refusal_names_the_groups() -> None:
    e = event(NO_SCALE_UP, reason="NotTriggerScaleUp", component="cluster-autoscaler", type_="Normal", count=4)
    d = only("sched.autoscaler", pod=pod(), nodes=[node("a")], events=[e])
    assert d.code == "AUTOSCALER_NO_SCALE_UP" and d.params["name"] == "cluster-autoscaler"
    assert "x4" in d.evidence[0]


def test_autoscaler_silent_without_a_refusal_or_for_a_placed_pod() -> None:
    assert run("sched.autoscaler", pod=pod(), nodes=[node("a")], events=[event(FIT)]) == []
    e = event(NO_SCALE_UP, reason="NotTriggerScaleUp", component="cluster-autoscaler")
    assert run("sched.autoscaler", pod=pod(node="a", phase="Running"), nodes=[node("a")], events=[e]) == []
