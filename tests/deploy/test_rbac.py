"""The ClusterRoles grant exactly what the code calls: derived from the source, never listed by hand.

Read-only role (always bound): every call outside ``bot/actions`` is granted, it grants no write
(``create`` only on ``pods/exec``, for ``nvml``/``verify``) and no resource the code never reads.
Remediation role (opt-in, ``remediation.enabled``): together with the read-only role it covers
every call in ``bot/actions``, and it grants nothing ``bot/actions`` does not use.

The roles are read from the Helm chart as ``helm template`` renders it, in every variant of its
switches (``render.variants()``).
"""

from __future__ import annotations

import functools
from pathlib import Path

from tests.deploy.kube_calls import WRITE_VERBS, Perm, Use, needed, scan_source, scan_tree
from tests.deploy.rbac import grants, has_wildcard
from tests.deploy.render import (
    REPO,
    combination_id,
    combination_values,
    find,
    one,
    prerender,
    render,
    valid,
    variants,
)

BOT = REPO / "bot"
ACTIONS = BOT / "actions"
#: the simulator serves the API; method names there are routes, not calls against a cluster
SIM = BOT / "sim"
#: gpubot's own state on the API (config.state: kubernetes): granted in the release namespace by
#: the gpubot-state Role, checked against these modules by tests/replicas/test_crds.py
STATE = (
    BOT / "coordination",
    BOT / "leader.py",
    BOT / "proactive" / "kube_store.py",
    *sorted((BOT / "remediation").glob("kube_*.py")),
)
#: the only write the read-only role may hold: exec of the fixed read commands (nvml, verify)
EXEC = {Perm("create", "", "pods/exec")}
#: subresources the read-only role may grant though the scan has not seen them yet
READONLY_EXTRA_RESOURCES = {("", "pods/exec")}

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


@functools.cache
def _scan(root: Path) -> tuple[tuple[Use, ...], tuple[str, ...]]:
    uses, problems = scan_tree(root, relative_to=REPO)
    return tuple(uses), tuple(problems)


def _reads() -> dict[Perm, list[str]]:
    """What everything outside bot/actions (and the simulator) needs."""
    uses = [u for u in _scan(BOT)[0] if not Path(REPO / u.path).is_relative_to(ACTIONS)]
    uses = [u for u in uses if not any(Path(REPO / u.path).is_relative_to(s) for s in STATE)]
    return needed([u for u in uses if not Path(REPO / u.path).is_relative_to(SIM)])


def _writes() -> dict[Perm, list[str]]:
    return needed(list(_scan(ACTIONS)[0]))


def _readonly() -> set[Perm]:
    return grants(one(render(), "ClusterRole", "gpubot-readonly"))


def _remediation() -> set[Perm]:
    return grants(one(render({"remediation": {"enabled": True}}), "ClusterRole", "gpubot-remediation"))


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
    writes = {p for p in _readonly() if p.verb in WRITE_VERBS} - EXEC
    assert not writes, "the read-only ClusterRole grants writes:\n" + _fmt(writes)


def test_readonly_role_grants_every_read_the_code_makes() -> None:
    missing = {p: w for p, w in _reads().items() if p not in _readonly()}
    assert not missing, "calls outside bot/actions that gpubot-readonly does not grant:\n" + _fmt(missing)


def test_readonly_role_grants_only_what_the_code_reads() -> None:
    used = {(p.group, p.resource) for p in _reads()} | READONLY_EXTRA_RESOURCES
    extra = {p for p in _readonly() if (p.group, p.resource) not in used}
    assert not extra, "gpubot-readonly grants resources no probe reads:\n" + _fmt(extra)
    odd = {p for p in _readonly() if p.verb not in {"get", "list", "watch"}} - EXEC
    assert not odd, "gpubot-readonly grants verbs beyond get/list/watch:\n" + _fmt(odd)


def test_no_action_needs_what_no_role_grants() -> None:
    granted = _readonly() | _remediation()
    missing = {p: w for p, w in _writes().items() if p not in granted}
    assert not missing, "calls in bot/actions that no gpubot ClusterRole grants:\n" + _fmt(missing)


def test_remediation_role_grants_nothing_beyond_what_actions_use() -> None:
    writes = _writes()
    assert writes, (
        "the scan found no official-client call in bot/actions, yet the remediation overlay grants "
        "writes: either the actions are not written yet or the scanner misses how they call the client"
    )
    extra = _remediation() - set(writes)
    assert not extra, "gpubot-remediation grants what bot/actions never calls:\n" + _fmt(extra)


def test_default_install_writes_nothing_and_reads_no_secret() -> None:
    """helm install with no values: no write verb but the exec of fixed read commands, no Secret."""
    objs = render()
    granted = set().union(*(grants(r) for r in find(objs, "ClusterRole")))
    assert {p for p in granted if p.verb in WRITE_VERBS} == EXEC
    assert not {p for p in granted if p.resource in ("secrets", "configmaps")}
    assert not find(objs, "ClusterRole", "gpubot-remediation")
    assert one(objs, "ConfigMap", "gpubot-config")["data"]["config.yaml"].count("dry_run: true") == 1


def test_container_exec_can_be_left_out() -> None:
    granted = grants(one(render({"rbac": {"containerExec": False}}), "ClusterRole", "gpubot-readonly"))
    assert not {p for p in granted if p.resource == "pods/exec"}
    assert granted == _readonly() - {Perm("create", "", "pods/exec"), Perm("get", "", "pods/exec")}


def test_roles_are_explicit_and_bound_only_to_the_bot_in_every_variant() -> None:
    prerender([combination_values(c) for c in variants()])
    for combo in filter(valid, variants()):
        name = combination_id(combo)
        objs = render(combination_values(combo))
        # the one Role: gpubot's own state in its namespace (tests/replicas/test_crds.py)
        assert {r["metadata"]["name"] for r in find(objs, "Role")} <= {"gpubot-state"}, name
        for binding in find(objs, "RoleBinding"):
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpubot", "namespace": "gpubot"}]
        roles = find(objs, "ClusterRole")
        assert {r["metadata"]["name"] for r in roles} <= {"gpubot-readonly", "gpubot-remediation"}, name
        assert not any(has_wildcard(r) for r in roles), name
        for binding in find(objs, "ClusterRoleBinding"):
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpubot", "namespace": "gpubot"}]
        bound = {b["roleRef"]["name"] for b in find(objs, "ClusterRoleBinding")}
        assert bound == {r["metadata"]["name"] for r in roles}, name
        assert "gpubot-readonly" in bound
        granted = set().union(*(grants(r) for r in roles))
        assert not {p for p in granted if p.resource == "secrets"}, f"{name}: the bot never reads Secrets"
        writes = {p for p in granted if p.verb in WRITE_VERBS} - EXEC
        assert bool(writes) == ("gpubot-remediation" in bound) == bool(combo.get("remediation.enabled")), (
            f"{name}: only remediation.enabled may grant writes"
        )


def test_impersonation_is_granted_for_exactly_the_mapped_users_and_groups() -> None:
    """config.identity_map alone decides who may be impersonated: no map, no grant."""
    assert not find(render(), "ClusterRole", "gpubot-impersonation")
    identity_map = {
        "U0ALICE": {"user": "alice@example.com", "groups": ["ml-team"]},
        "S0GPU": {"user": "gpu-users"},
    }
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
