"""The chart's CustomResourceDefinitions and state Role, checked offline.

The CRDs (``deploy/helm/gpubot/crds/gpubot.dev.yaml``) validate against the Kubernetes schemas of
the versions the chart supports, describe exactly the types the simulator serves (names, short
names, scope, the status subresource, printer columns), and the Role of ``config.state:
kubernetes`` grants the state code what it calls in the release namespace and nothing more: no
ClusterRole, and no way to change or delete an audit record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from bot.sim.store import RESOURCE_TYPES
from bot.state.kube import GROUP, VERSION
from tests.deploy.rbac import grants
from tests.deploy.render import find, one, render

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "gpubot" / "crds" / "gpubot.dev.yaml"
SCHEMA_VERSIONS = ["1.29.0", "1.32.0"]
OURS = {rt.plural: rt for rt in RESOURCE_TYPES if rt.group == GROUP}


def crds() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(CRDS.read_text(encoding="utf-8")) if d]


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_the_crds_match_the_kubernetes_schemas(version: str) -> None:
    for crd in crds():
        kubernetes_validate.validate(crd, version, strict=True)


def test_the_crds_describe_what_the_simulator_serves() -> None:
    found = {c["spec"]["names"]["plural"]: c for c in crds()}
    assert set(found) == set(OURS)
    for plural, crd in found.items():
        rt, spec = OURS[plural], crd["spec"]
        assert crd["metadata"]["name"] == f"{plural}.{GROUP}" and spec["group"] == GROUP
        assert spec["scope"] == "Namespaced" and rt.namespaced
        assert (spec["names"]["kind"], spec["names"]["singular"]) == (rt.kind, rt.singular)
        assert spec["names"].get("shortNames", []) == list(rt.short_names)
        (served,) = spec["versions"]
        assert served["name"] == VERSION and served["served"] and served["storage"]
        assert ("status" in served.get("subresources", {})) == ("status" in rt.subresources)
        columns = [(c["name"], c["jsonPath"], c["type"]) for c in served["additionalPrinterColumns"]]
        assert columns == [(c.name, c.json_path, c.type) for c in rt.columns]
    remediations = found["gpuremediations"]["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in remediations] == ["Action", "Target", "State", "Requested By", "Age"]


def test_the_state_role_is_namespaced_and_keeps_the_audit_append_only() -> None:
    objs = render()
    role = one(objs, "Role", "gpubot-state")
    assert role["metadata"]["namespace"] == "gpubot"
    binding = one(objs, "RoleBinding", "gpubot-state")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpubot", "namespace": "gpubot"}]
    granted = grants(role)
    audit = {p.verb for p in granted if p.resource == "gpuauditrecords"}
    assert audit == {"get", "list", "create"}
    assert {p.verb for p in granted if p.resource == "gpuremediations/status"} == {"update"}
    assert {p.resource for p in granted if p.group == "coordination.k8s.io"} == {"leases"}
    assert not any(p.resource == "gpuauditrecords" for r in find(objs, "ClusterRole") for p in grants(r))
    sqlite = render({"config": {"state": "sqlite"}})
    assert not find(sqlite, "Role", "gpubot-state") and not find(sqlite, "PodDisruptionBudget")
    assert one(sqlite, "Deployment")["spec"]["replicas"] == 1


def test_kubernetes_state_runs_two_spread_replicas_without_a_volume() -> None:
    objs = render()
    deployment = one(objs, "Deployment")["spec"]
    assert deployment["replicas"] == 2 and deployment["strategy"]["type"] == "RollingUpdate"
    pod = deployment["template"]["spec"]
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert not find(objs, "PersistentVolumeClaim")
    assert {"name": "state", "emptyDir": {"sizeLimit": "64Mi"}} in pod["volumes"]
    assert one(objs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    assert not find(render({"replicaCount": 1}), "PodDisruptionBudget")


def test_the_state_role_grants_exactly_what_the_state_code_calls() -> None:
    """Derived from the source like the ClusterRoles (tests/deploy/test_rbac.py): every call of
    the state modules is granted, and the Role grants nothing they never call."""
    from bot.doctor.kube_calls import needed, scan_source
    from tests.deploy.render import REPO
    from tests.deploy.test_rbac import STATE

    files = [f for s in STATE for f in ([s] if s.is_file() else sorted(s.rglob("*.py")))]
    uses = []
    for file in files:
        found, problems = scan_source(file.read_text(encoding="utf-8"), str(file.relative_to(REPO)))
        assert not problems, problems
        uses.extend(found)
    calls = set(needed(uses))
    granted = grants(one(render(), "Role", "gpubot-state"))
    # the custom-object calls name no resource in their URL template ({plural}): check by group
    custom = {p for p in calls if p.group == "{group}"}
    assert {(p.verb, p.group, p.resource) for p in calls - custom} <= {(p.verb, p.group, p.resource) for p in granted}
    assert {p.verb for p in custom} <= {p.verb for p in granted if p.group == GROUP}
    unused = {p for p in granted if p.group == "coordination.k8s.io"} - calls
    assert not unused, unused
    # what gpubot doctor asks the API server about, kind by kind: exactly what the Role grants
    from bot.doctor.needs import needs

    assert set(needs().state) <= granted  # (the scan does not see get_namespaced_custom_object)
