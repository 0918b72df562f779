"""The roles grant exactly what the code calls: derived from the source, never listed by hand.

Read-only ClusterRole (always bound): every call outside ``bot/actions`` is granted except exec;
it grants no write and no resource the code never reads. Exec (``pods/exec``, the node reads
through the agent) is a Role in the release namespace only; exec into user containers (``nvml``,
``verify``) is the opt-in ``containerProbes`` ClusterRole. Remediation (opt-in,
``remediation.enabled``): together with the others it covers every call in ``bot/actions``, and
it grants nothing ``bot/actions`` does not use.

The roles are read from the Helm chart as ``helm template`` renders it, in every variant of its
switches (``render.variants()``: a sample in which any three switches meet in every setting), each
also with ``config.identity_map`` set (impersonation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.doctor import needs as needs_module
from bot.doctor.kube_calls import WRITE_VERBS, Perm, Use, needed, scan_source
from tests.deploy.rbac import grants, has_wildcard
from tests.deploy.render import (
    NAMESPACE,
    REPO,
    Obj,
    combination_id,
    combination_values,
    coverage_gaps,
    find,
    merge,
    one,
    prerender,
    render,
    valid,
    variants,
)

BOT = REPO / "bot"
EXEC_RESOURCE = ("", "pods/exec")
BOT_SA = [{"kind": "ServiceAccount", "name": "gpubot", "namespace": NAMESPACE}]
#: a Slack user and a group mapped to Kubernetes identities: turns impersonation on
IDENTITY_MAP = {"U0ALICE": {"user": "alice@example.com", "groups": ["ml-team"]}, "S0GPU": {"user": "gpu-users"}}
#: gpubot's own state on the API (config.state: kubernetes): granted in the release namespace by
#: the gpubot-state Role, checked against these modules by tests/replicas/test_crds.py
STATE = needs_module.STATE

SYNTHETIC = '''
"""A module shaped like the real ones: calls, passed methods, a dispatch table, watch, exec."""
from kubernetes import client, watch
from kubernetes.stream import stream

_READERS = {"Job": ("BatchV1Api", "read_namespaced_job")}

def probe(core: client.CoreV1Api, apps: client.AppsV1Api) -> None:
    core.read_namespaced_pod("p", "ns")
    fn = apps.list_daemon_set_for_all_namespaces
    for _ in watch.Watch().stream(core.list_node):
        pass
    core.list_namespaced_event("ns")            # also on EventsV1Api: CoreV1Api is named here
    stream(core.connect_get_namespaced_pod_exec, "p", "ns", command=["nvidia-smi"])
    core.list_pods()                            # our own facade name, not a client method
    "read_namespaced_pod is mentioned in prose"  # not a whole-string method name

def act(core: client.CoreV1Api) -> None:
    core.patch_node("n", {"spec": {"unschedulable": True}})
    core.delete_namespaced_pod("p", "ns", grace_period_seconds=30)
'''


def _scan(root: Path) -> tuple[tuple[Use, ...], tuple[str, ...]]:
    assert root == BOT
    return needs_module.scanned()


def _reads() -> dict[Perm, list[str]]:
    """What everything outside bot/actions (and the simulator, and the state modules) needs,
    the exec into the agents included (the product's own answer: ``bot.doctor.needs``)."""
    found = needs_module.needs()
    return {**found.reads, **found.exec}


def _exec_needed() -> set[Perm]:
    """The exec permissions the probes need (node reads through the agent, nvml, verify)."""
    return {p for p in _reads() if (p.group, p.resource) == EXEC_RESOURCE}


def _writes() -> dict[Perm, list[str]]:
    return needs_module.needs().remediation


def _readonly() -> set[Perm]:
    return grants(one(render(), "ClusterRole", "gpubot-readonly"))


def _remediation() -> set[Perm]:
    return grants(one(render({"remediation": {"enabled": True}}), "ClusterRole", "gpubot-remediation"))


def _all_grants(objs: list[Obj]) -> set[Perm]:
    """Everything the bot's service account may do, cluster-wide or in its namespace."""
    return set().union(*(grants(r) for r in [*find(objs, "ClusterRole"), *find(objs, "Role")]))


def _fmt(perms: dict[Perm, list[str]] | set[Perm]) -> str:
    if isinstance(perms, dict):
        return "\n".join(f"  {p}  <- {', '.join(w[:3])}" for p, w in sorted(perms.items()))
    return "\n".join(f"  {p}" for p in sorted(perms))


def test_scanner_finds_calls_in_a_synthetic_module() -> None:
    uses, problems = scan_source(SYNTHETIC, "synthetic.py")
    assert problems == []
    assert sorted(u.method for u in uses) == sorted(
        [
            "read_namespaced_job",
            "read_namespaced_pod",
            "list_daemon_set_for_all_namespaces",
            "list_node",
            "list_namespaced_event",
            "connect_get_namespaced_pod_exec",
            "patch_node",
            "delete_namespaced_pod",
        ]
    )
    perms = set(needed(uses))
    assert perms == {
        Perm("get", "batch", "jobs"),
        Perm("get", "", "pods"),
        Perm("list", "apps", "daemonsets"),
        Perm("watch", "apps", "daemonsets"),  # the module uses watch.Watch
        Perm("list", "", "nodes"),
        Perm("watch", "", "nodes"),
        Perm("list", "", "events"),
        Perm("watch", "", "events"),
        Perm("create", "", "pods/exec"),
        Perm("get", "", "pods/exec"),
        Perm("patch", "", "nodes"),
        Perm("delete", "", "pods"),
    }


def test_scanner_reports_a_call_it_cannot_attribute() -> None:
    """list_namespaced_event exists on CoreV1Api and EventsV1Api; with neither named, no guess."""
    uses, problems = scan_source("def f(api):\n    api.list_namespaced_event('ns')\n", "amb.py")
    assert uses == []
    assert len(problems) == 1 and "amb.py:2" in problems[0] and "EventsV1Api" in problems[0]


def test_scan_of_bot_finds_the_kubernetes_reads() -> None:
    kube = BOT / "probes" / "kube.py"
    assert kube.is_file(), "bot/probes/kube.py (the Kubernetes read facade) is missing"
    uses, _ = _scan(BOT)
    in_kube = [u for u in uses if u.path == "bot/probes/kube.py"]
    assert in_kube, (
        "the scan found no official-client call in bot/probes/kube.py: the scanner no longer "
        "recognises how the code names client methods, so the RBAC checks would pass vacuously"
    )
    assert Perm("get", "", "pods") in _reads()
    assert Perm("list", "", "pods") in _reads()


def test_every_call_is_attributable() -> None:
    assert _scan(BOT)[1] == (), "\n".join(_scan(BOT)[1])


def test_readonly_role_has_no_write_verb() -> None:
    writes = {p for p in _readonly() if p.verb in WRITE_VERBS}
    assert not writes, "the read-only ClusterRole grants writes:\n" + _fmt(writes)


def test_readonly_role_grants_every_read_the_code_makes() -> None:
    missing = {p: w for p, w in _reads().items() if p not in _readonly() and (p.group, p.resource) != EXEC_RESOURCE}
    assert not missing, "calls outside bot/actions that gpubot-readonly does not grant:\n" + _fmt(missing)


def test_readonly_role_grants_only_what_the_code_reads() -> None:
    used = {(p.group, p.resource) for p in _reads()}
    extra = {p for p in _readonly() if (p.group, p.resource) not in used}
    assert not extra, "gpubot-readonly grants resources no probe reads:\n" + _fmt(extra)
    odd = {p for p in _readonly() if p.verb not in {"get", "list", "watch"}}
    assert not odd, "gpubot-readonly grants verbs beyond get/list/watch:\n" + _fmt(odd)


def test_exec_into_the_agents_is_a_role_in_the_release_namespace() -> None:
    """The exec the node reads need, and no more, in the bot's own namespace: never cluster-wide."""
    assert _exec_needed(), "the scan found no exec call: the agent transport's exec is not seen"
    objs = render()
    role = one(objs, "Role", "gpubot-node-agent-exec")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role) == _exec_needed() | {Perm(v, "", "pods") for v in ("get", "list", "watch")}
    binding = one(objs, "RoleBinding", "gpubot-node-agent-exec")
    assert binding["metadata"]["namespace"] == NAMESPACE and binding["subjects"] == BOT_SA
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert not any((p.group, p.resource) == EXEC_RESOURCE for r in find(objs, "ClusterRole") for p in grants(r))


def test_container_probes_are_the_only_cluster_wide_exec() -> None:
    objs = render({"containerProbes": {"enabled": True}})
    assert grants(one(objs, "ClusterRole", "gpubot-container-probes")) == _exec_needed()
    assert one(objs, "ClusterRoleBinding", "gpubot-container-probes")["subjects"] == BOT_SA
    assert grants(one(objs, "ClusterRole", "gpubot-readonly")) == _readonly()
    assert not find(render(), "ClusterRole", "gpubot-container-probes")


def test_no_action_needs_what_no_role_grants() -> None:
    granted = _all_grants(render({"remediation": {"enabled": True}}))
    missing = {p: w for p, w in _writes().items() if p not in granted}
    assert not missing, "calls in bot/actions that no gpubot role grants:\n" + _fmt(missing)


def test_remediation_role_grants_nothing_beyond_what_actions_use() -> None:
    writes = _writes()
    assert writes, (
        "the scan found no official-client call in bot/actions, yet the remediation overlay grants "
        "writes: either the actions are not written yet or the scanner misses how they call the client"
    )
    extra = _remediation() - set(writes)
    assert not extra, "gpubot-remediation grants what bot/actions never calls:\n" + _fmt(extra)
    actuator = grants(one(render({"remediation": {"enabled": True}}), "Role", "gpubot-actuator-exec"))
    used = set(writes) | set(_reads())
    assert actuator - used <= {Perm("watch", "", "pods")}, _fmt(actuator - used)


def test_default_install_writes_nothing_and_reads_no_secret() -> None:
    """helm install with no values: no write verb on anything of the cluster's; the only writes are exec
    into its own agents and gpubot's own state objects (gpubot.dev, Leases), both in its namespace."""
    objs = render()
    cluster_wide = set().union(*(grants(r) for r in find(objs, "ClusterRole")))
    assert not {p for p in cluster_wide if p.verb in WRITE_VERBS}
    own_state = {"gpubot.dev", "coordination.k8s.io"}
    writes = {p for p in _all_grants(objs) if p.verb in WRITE_VERBS and p.group not in own_state}
    assert writes == {Perm("create", "", "pods/exec")}
    assert {r["metadata"]["namespace"] for r in find(objs, "Role")} == {NAMESPACE}
    assert not {p for p in _all_grants(objs) if p.resource in ("secrets", "configmaps")}
    assert not find(objs, "ClusterRole", "gpubot-remediation") and not find(objs, "DaemonSet", "gpubot-actuator")
    assert one(objs, "ConfigMap", "gpubot-config")["data"]["config.yaml"].count("dry_run: true") == 1


def _rbac_variants() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(id, switches, values) of every valid variant, each without and with impersonation."""
    out = []
    for combo in filter(valid, variants()):
        values = combination_values(combo)
        out.append((combination_id(combo), combo, values))
        impersonating = merge(values, {"config": {"identity_map": IDENTITY_MAP}})
        out.append((combination_id(combo) + ",impersonation", {**combo, "impersonation": True}, impersonating))
    return out


def _check_variant(name: str, combo: dict[str, Any], objs: list[Obj]) -> None:
    on = {k: bool(combo.get(k)) for k in ("remediation.enabled", "containerProbes.enabled", "impersonation")}
    agent = combo.get("nodeAgent.enabled", True)
    cluster_roles = {r["metadata"]["name"]: r for r in find(objs, "ClusterRole")}
    expected = {"gpubot-readonly"}
    expected |= {"gpubot-remediation"} if on["remediation.enabled"] else set()
    expected |= {"gpubot-container-probes"} if on["containerProbes.enabled"] else set()
    expected |= {"gpubot-impersonation"} if on["impersonation"] else set()
    assert set(cluster_roles) == expected, name
    roles = {r["metadata"]["name"]: r for r in find(objs, "Role")}
    expected_roles = {"gpubot-node-agent-exec"} if agent else set()
    expected_roles |= {"gpubot-actuator-exec", "gpubot-node-locks"} if on["remediation.enabled"] else set()
    expected_roles |= {"gpubot-state"}  # config.state: kubernetes is the chart default
    assert set(roles) == expected_roles, name
    assert all(r["metadata"]["namespace"] == NAMESPACE for r in [*roles.values(), *find(objs, "RoleBinding")]), name
    for kind, bindings, bound_to in (
        ("ClusterRole", "ClusterRoleBinding", cluster_roles),
        ("Role", "RoleBinding", roles),
    ):
        found = find(objs, bindings)
        assert all(b["subjects"] == BOT_SA and b["roleRef"]["kind"] == kind for b in found), name
        assert {b["roleRef"]["name"] for b in found} == set(bound_to), f"{name}: every {kind} bound, and only those"
    impersonation = cluster_roles.pop("gpubot-impersonation", None)
    if impersonation is not None:  # pinned by resourceNames, which grants() does not model
        assert all(r["verbs"] == ["impersonate"] and r["resourceNames"] for r in impersonation["rules"]), name
    assert not any(has_wildcard(r) for r in [*cluster_roles.values(), *roles.values()]), name
    cluster_wide = set().union(*(grants(r) for r in cluster_roles.values()))
    state = grants(roles["gpubot-state"])  # its exact calls: tests/replicas/test_crds.py
    assert {p.group for p in state} <= {"gpubot.dev", "coordination.k8s.io"}, f"{name}: state Role beyond its objects"
    # gpubot's own objects: the state (its exact calls: tests/replicas/test_crds.py) and the node
    # locks (test_node_actions_lock_their_node_in_the_release_namespace_whatever_the_state)
    own = ("gpubot-state", "gpubot-node-locks")
    namespaced = set().union(*(grants(r) for n, r in roles.items() if n not in own), set())
    assert not {p for p in cluster_wide | namespaced if p.resource == "secrets"}, f"{name}: the bot never reads Secrets"
    writes = {p for p in cluster_wide if p.verb in WRITE_VERBS}
    assert bool(writes - _exec_needed()) == on["remediation.enabled"], f"{name}: only remediation may write"
    cluster_exec = {p for p in cluster_wide if (p.group, p.resource) == EXEC_RESOURCE}
    assert bool(cluster_exec) == on["containerProbes.enabled"], f"{name}: cluster-wide exec only with containerProbes"
    assert {p for p in namespaced if p.verb in WRITE_VERBS} <= _exec_needed(), name
    assert bool(find(objs, "DaemonSet", "gpubot-actuator")) == on["remediation.enabled"], name
    assert bool(find(objs, "DaemonSet", "gpubot-node")) == agent, name


def test_rbac_properties_hold_in_every_variant() -> None:
    """Every sampled combination of the switches (any three together in each setting), with and
    without impersonation."""
    cases = _rbac_variants()
    prerender([values for _, _, values in cases], lint=False)
    for name, combo, values in cases:
        _check_variant(name, combo, render(values))
    assert len(cases) == 2 * len(list(filter(valid, variants())))
    assert not coverage_gaps([combo for _, combo, _ in cases]), "every three switches, in each setting"


def test_impersonation_is_granted_for_exactly_the_mapped_users_and_groups() -> None:
    """config.identity_map alone decides who may be impersonated: no map, no grant."""
    assert not find(render(), "ClusterRole", "gpubot-impersonation")
    identity_map = IDENTITY_MAP
    objs = render({"config": {"identity_map": identity_map}})
    role = one(objs, "ClusterRole", "gpubot-impersonation")
    by_resource = {}
    for rule in role["rules"]:
        assert rule["verbs"] == ["impersonate"] and rule["apiGroups"] == [""]
        assert rule.get("resourceNames") and "*" not in rule["resourceNames"]
        by_resource[tuple(rule["resources"])] = set(rule["resourceNames"])
    assert by_resource == {("users",): {"alice@example.com", "gpu-users"}, ("groups",): {"ml-team"}}
    binding = one(objs, "ClusterRoleBinding", "gpubot-impersonation")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpubot", "namespace": "gpubot"}]
    assert one(objs, "ConfigMap", "gpubot-config")["data"]["config.yaml"].count("alice@example.com") == 1


NODE_LOCKS = BOT / "state" / "kube_locks.py"


def test_node_actions_lock_their_node_in_the_release_namespace_whatever_the_state() -> None:
    """The per-node Lease every actor takes (issue 29): granted with remediation whatever
    config.state is, in the release namespace only, and exactly the lease calls the lock makes."""
    uses, problems = scan_source(NODE_LOCKS.read_text(encoding="utf-8"), str(NODE_LOCKS.relative_to(REPO)))
    assert not problems, problems
    calls = {p for p in needed(uses) if p.group == "coordination.k8s.io"}
    assert {p.verb for p in calls} >= {"get", "create", "update"}, calls
    for state in ("sqlite", "kubernetes"):
        objs = render({"remediation": {"enabled": True}, "config": {"state": state}})
        role = one(objs, "Role", "gpubot-node-locks")
        assert role["metadata"]["namespace"] == NAMESPACE
        assert grants(role) == calls, _fmt(grants(role) ^ calls)
        binding = one(objs, "RoleBinding", "gpubot-node-locks")
        assert binding["subjects"] == BOT_SA and binding["roleRef"]["name"] == "gpubot-node-locks"
    assert not find(render(), "Role", "gpubot-node-locks"), "without remediation nothing takes a node lock"
