"""The chart's conventional values (name overrides, an existing ServiceAccount, the per-node
DaemonSets' shared tolerations and priority), the platform presets, and the lifecycle text a user
reads before an upgrade or an uninstall.

The presets also go through every strict check of test_chart.py (lint, the Kubernetes schemas,
checkov), as variants of ``render.variants()``; here is what each one is for.
"""

from __future__ import annotations

import re

import yaml

from tests.deploy.render import CHART, REPO, Obj, find, nested, one, presets, render

AGENT = "gpubot-node"
ACTUATOR = "gpubot-actuator"


def _pod(obj: Obj) -> Obj:
    return dict(obj["spec"]["template"]["spec"])


def _env(pod: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["containers"][0].get("env", [])}


def test_names_follow_the_overrides_and_labels_do_not() -> None:
    objs = render({"fullnameOverride": "gpu-helper", "serviceAccount": {"create": False, "name": "corp-sa"}})
    assert one(objs, "Deployment")["metadata"]["name"] == "gpu-helper"
    agent = one(objs, "DaemonSet", "gpu-helper-node")
    assert agent["metadata"]["labels"]["app.kubernetes.io/name"] == AGENT, "the bot finds its agents by this label"
    assert not find(objs, "ServiceAccount"), "serviceAccount.create: false uses yours"
    assert _pod(one(objs, "Deployment"))["serviceAccountName"] == "corp-sa"
    bindings = find(objs, "RoleBinding") + find(objs, "ClusterRoleBinding")
    assert bindings and {s["name"] for b in bindings for s in b["subjects"]} == {"corp-sa"}
    renamed = render({"nameOverride": "gpu-assist"})
    assert one(renamed, "Deployment")["metadata"]["name"] == "gpubot-gpu-assist"


def test_the_per_node_daemonsets_share_tolerations_and_priority() -> None:
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    objs = render({"remediation": {"enabled": True}, "daemonsets": {"tolerations": tolerations}})
    for name in (AGENT, ACTUATOR):
        pod = _pod(one(objs, "DaemonSet", name))
        assert pod["tolerations"] == tolerations, name
        assert pod["priorityClassName"] == "system-node-critical", name
    assert not find(objs, "ResourceQuota"), "the critical-pods quota is GKE's, opt-in"


def test_every_preset_is_documented_and_does_what_its_platform_needs() -> None:
    assert set(presets()) == {"eks", "gke", "aks", "openshift", "tke"}
    readme = (REPO / "deploy" / "README.md").read_text(encoding="utf-8")
    for name in presets():
        assert f"values-{name}.yaml" in readme, f"deploy/README.md has no section for values-{name}.yaml"
    rendered = {name: render(nested(values)) for name, values in presets().items()}

    for name in ("eks", "aks", "gke", "tke"):
        agent = _pod(one(rendered[name], "DaemonSet", AGENT))
        assert "runtimeClassName" not in agent, f"{name}: no nvidia RuntimeClass there"

    gke = rendered["gke"]
    pod = _pod(one(gke, "DaemonSet", AGENT))
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] == "/host-driver")
    assert mount["readOnly"] is True
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["hostPath"]["path"] == "/home/kubernetes/bin/nvidia"
    assert _env(pod)["PATH"].startswith("/host-driver/bin:") and _env(pod)["LD_LIBRARY_PATH"] == "/host-driver/lib64"
    quota = one(gke, "ResourceQuota")
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == ["system-node-critical"]

    openshift = rendered["openshift"]
    scc = one(openshift, "SecurityContextConstraints")
    pod = _pod(one(openshift, "DaemonSet", AGENT))
    assert scc["users"] == [f"system:serviceaccount:gpubot:{pod['serviceAccountName']}"]
    assert one(openshift, "ServiceAccount", pod["serviceAccountName"])["automountServiceAccountToken"] is False
    assert scc["allowHostDirVolumePlugin"] is True and scc["allowPrivilegedContainer"] is False
    assert scc["requiredDropCapabilities"] == ["ALL"] and not scc["allowedCapabilities"]
    assert pod["runtimeClassName"] == "nvidia"
    assert _env(pod)["PATH"].startswith("/host-driver/usr/bin:")
    for container in pod["containers"]:
        assert all(m.get("readOnly") for m in container["volumeMounts"] if m["name"] != "tmp"), "host mounts read-only"

    tke = _pod(one(rendered["tke"], "Deployment"))
    required = tke["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": "qgpu-device-enable", "operator": "NotIn", "values": ["enable"]} in required["nodeSelectorTerms"][
        0
    ]["matchExpressions"]


def test_defaults_point_at_the_published_image() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert values["image"]["repository"].startswith("ghcr.io/")
    assert values["image"]["pullPolicy"] == "IfNotPresent" and values["image"]["tag"] == ""
    assert values["config"]["node_access"] == "auto", "the CLI's default too (bot/settings/__init__.py)"


def test_the_readme_says_what_uninstall_leaves_and_what_each_rename_needs() -> None:
    readme = (REPO / "deploy" / "README.md").read_text(encoding="utf-8")
    uninstall = readme.split("## Uninstall", 1)[1].split("\n## ", 1)[0]
    crds = re.findall(r"(?m)^  name: (\S+\.gpubot\.dev)$", (CHART / "crds" / "gpubot.dev.yaml").read_text())
    assert len(crds) >= 4
    for crd in crds:
        assert crd in uninstall, f"the uninstall section names the command that removes {crd}"
    assert "GpuAuditRecord" in uninstall and "helm uninstall" in uninstall
    upgrading = readme.split("## Upgrades", 1)[1].split("\n## ", 1)[0]
    for old, new in [
        ("gpuNodes.tolerations", "daemonsets.tolerations"),
        ("nodeAgent.priorityClassName", "daemonsets.priorityClassName"),
        ("actuator.priorityClassName", "daemonsets.priorityClassName"),
        ("metrics.serviceMonitor.labels", "metrics.serviceMonitor.additionalLabels"),
        ("image.repository", "ghcr.io"),
        ("image.pullPolicy", "IfNotPresent"),
        ("config.node_access", "auto"),
    ]:
        note = next((line for line in upgrading.splitlines() if f"`{old}`" in line), "")
        assert new in note, f"deploy/README.md, Upgrades: no note on {old} -> {new}"
