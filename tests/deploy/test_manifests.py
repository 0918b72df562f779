"""The Kustomize targets render, match the Kubernetes schemas, wire the bot the way its settings
expect, keep no copy of the runbooks (the image carries them; the ConfigMap holds only
overrides), and pass a security scan.

Every target (base, each overlay, and all components together) is rendered with the real
``kubectl kustomize``, the same code path as ``kubectl apply -k``.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from bot.actions import ACTIONS
from bot.settings import load_settings
from tests.deploy.checkov_tool import scan
from tests.deploy.render import REPO, find, one, render, render_text, target_names

TARGETS = target_names()
#: schema versions checked offline: an older cluster still common on TKE/TCE, and a recent one
SCHEMA_VERSIONS = ["1.29.0", "1.32.0"]
DEPLOY_README = REPO / "deploy" / "README.md"

#: checkov checks that fail by design, each with the reason; a skip that no longer fails is an error
CHECKOV_SKIPS = {
    "CKV_K8S_43": "image by digest: each user builds and pushes the image (deploy/README.md) and pins "
    "it with `kustomize edit set image`; a placeholder digest in the manifests would be worse",
    "CKV_K8S_38": "service account token mounted: the bot is a Kubernetes API client and needs it",
}


def _deployment(target: str) -> dict[str, Any]:
    return one(render(target), "Deployment", "gpubot")


def _container(target: str) -> dict[str, Any]:
    containers = _deployment(target)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def _env(target: str) -> dict[str, str]:
    """The container's environment as the bot sees it: envFrom ConfigMaps, then env."""
    objs = render(target)
    out: dict[str, str] = {}
    for ref in _container(target).get("envFrom", []):
        out.update(one(objs, "ConfigMap", ref["configMapRef"]["name"])["data"])
    out.update({e["name"]: e["value"] for e in _container(target).get("env", [])})
    return out


def _mounts(target: str) -> dict[str, dict[str, Any]]:
    """mount path -> the volume mounted there."""
    volumes = {v["name"]: v for v in _deployment(target)["spec"]["template"]["spec"]["volumes"]}
    return {m["mountPath"]: volumes[m["name"]] for m in _container(target)["volumeMounts"]}


def _volume_at(target: str, path: str) -> dict[str, Any]:
    for mount, volume in _mounts(target).items():
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return volume
    raise AssertionError(f"{target}: {path} is not on any mounted volume")


@pytest.mark.parametrize("target", TARGETS)
def test_target_renders_into_the_gpubot_namespace(target: str) -> None:
    objs = render(target)
    kinds = {o["kind"] for o in objs}
    assert {"Namespace", "ServiceAccount", "Deployment", "Service", "PersistentVolumeClaim"} <= kinds
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for obj in objs:
        meta = obj["metadata"]
        if obj["kind"] not in cluster_scoped:
            assert meta.get("namespace") == "gpubot", f"{obj['kind']}/{meta['name']} outside namespace gpubot"
        assert meta.get("labels", {}).get("app.kubernetes.io/name") == "gpubot", (
            f"{obj['kind']}/{meta['name']}"
        )


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("target", TARGETS)
def test_target_matches_kubernetes_schema(target: str, version: str) -> None:
    for obj in render(target):
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{target}: {obj['kind']}/{obj['metadata']['name']} invalid for {version}: {exc}")


@pytest.mark.parametrize("target", TARGETS)
def test_runbook_configmap_holds_only_overrides_and_is_mounted_whole(target: str) -> None:
    """The image carries the built-in runbooks; the ConfigMap is the operator's overrides, empty here."""
    configmap = one(render(target), "ConfigMap", "gpubot-runbooks-")
    assert not configmap.get("data") and not configmap.get("binaryData"), "base ships no runbook copies"
    volume = _volume_at(target, _env(target)["GPUBOT_RUNBOOK_DIR"])
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    assert volume["configMap"].get("items") is None, "the mount must carry every override file"


def test_no_runbook_copies_under_deploy() -> None:
    """runbooks/ is the one source: no runbook file (a YAML mapping with a runbook kind) in deploy/."""
    copies = []
    for path in sorted((REPO / "deploy").rglob("*.y*ml")):
        if re.search(r"(?m)^kind: (findings|diagnosis|guidance)\s*$", path.read_text(encoding="utf-8")):
            copies.append(str(path.relative_to(REPO)))
    assert copies == [], "runbooks are shipped in the package; override them with a ConfigMap (deploy/README.md)"


@pytest.mark.parametrize("target", TARGETS)
def test_settings_in_the_manifests_load(target: str, tmp_path: Path) -> None:
    """The settings ConfigMap and env are real settings: the bot's own loader accepts them."""
    env = _env(target)
    config = one(render(target), "ConfigMap", "gpubot-config-")
    assert _volume_at(target, env["GPUBOT_CONFIG"])["configMap"]["name"] == config["metadata"]["name"]
    path = tmp_path / "config.yaml"
    path.write_text(config["data"][posixpath.basename(env["GPUBOT_CONFIG"])])
    # the secret files exist only in the cluster; their paths are checked separately
    plain = {k: v for k, v in env.items() if not k.endswith("_FILE") and k != "GPUBOT_CONFIG"}
    settings = load_settings(env=plain, config_file=str(path))
    assert settings.clusters[0].in_cluster
    assert settings.slack_mode == ("http" if target in ("overlays/http-mode", "all-components") else "socket")
    assert settings.dry_run == (target not in ("overlays/remediation", "all-components"))
    assert settings.http_port == 8080
    state = _volume_at(target, settings.state_path)
    assert state["persistentVolumeClaim"]["claimName"] == "gpubot-state"


@pytest.mark.parametrize("target", TARGETS)
def test_secrets_are_files_from_the_user_created_secrets(target: str) -> None:
    env = _env(target)
    mode = "http" if env["GPUBOT_SLACK_MODE"] == "http" else "socket"
    files = {k: v for k, v in env.items() if k.endswith("_FILE")}
    wanted = {"GPUBOT_SLACK_BOT_TOKEN_FILE"} | (
        {"GPUBOT_SLACK_SIGNING_SECRET_FILE"} if mode == "http" else {"GPUBOT_SLACK_APP_TOKEN_FILE"}
    )
    assert set(files) == wanted, "a secret file the mode does not use would fail settings loading"
    readme = DEPLOY_README.read_text(encoding="utf-8")
    for path in [*files.values(), env["GPUBOT_SSH_KEY_PATH"], env["GPUBOT_SSH_KNOWN_HOSTS"]]:
        secret = _volume_at(target, path)["secret"]
        key = posixpath.basename(path)
        assert re.search(rf"--from-\w+={re.escape(key)}=", readme), f"README never creates key {key}"
        assert f"create secret generic {secret['secretName']}" in readme
    assert not any("secretKeyRef" in str(e) for e in _container(target).get("env", []))


@pytest.mark.parametrize("target", TARGETS)
def test_deployment_is_locked_down(target: str) -> None:
    dep = _deployment(target)
    spec = dep["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"]["type"] == "Recreate"  # one SQLite writer on a ReadWriteOnce volume
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "gpubot"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = _container(target)
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc.get("privileged") in (None, False)
    assert container["args"] == ["serve"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/var/lib/gpubot", "/tmp"}
    service = one(render(target), "Service", "gpubot")
    assert [p["name"] for p in service["spec"]["ports"]] == ["http"]
    assert service["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize("target", TARGETS)
def test_shutdown_waits_long_enough_for_what_the_pod_may_run(target: str, tmp_path: Path) -> None:
    """SIGTERM waits for diagnoses (``shutdown_grace_s``) and, with remediation on, for a running
    action up to its own maximum: the pod's grace period must cover it, or a rollout kills a
    kubelet restart mid-way."""
    env = _env(target)
    config = one(render(target), "ConfigMap", "gpubot-config-")
    path = tmp_path / "config.yaml"
    path.write_text(config["data"][posixpath.basename(env["GPUBOT_CONFIG"])])
    plain = {k: v for k, v in env.items() if not k.endswith("_FILE") and k != "GPUBOT_CONFIG"}
    settings = load_settings(env=plain, config_file=str(path))
    grace = _deployment(target)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > settings.shutdown_grace_s
    if not settings.dry_run:
        longest = max(a.max_duration_s(settings) for a in ACTIONS.values())
        assert grace > longest, f"{target}: {grace} s grace, an action may take {longest:.0f} s"


def test_http_mode_publishes_only_the_slack_endpoint() -> None:
    ingress = one(render("overlays/http-mode"), "Ingress", "gpubot")
    paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/slack/events", "Exact")]
    assert ingress["spec"]["tls"]
    assert not find(render("base"), "Ingress")


def test_tke_qgpu_keeps_the_bot_off_qgpu_nodes() -> None:
    pod = _deployment("overlays/tke-qgpu")["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    exprs = [e for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]]
    assert {"key": "qgpu-device-enable", "operator": "NotIn", "values": ["enable"]} in exprs
    pvc = one(render("overlays/tke-qgpu"), "PersistentVolumeClaim", "gpubot-state")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "10Gi"


def test_dockerfile_is_multi_stage_non_root_and_serves() -> None:
    text = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    stages = re.split(r"(?m)^FROM ", text)[1:]
    assert len(stages) >= 2, "multi-stage: build tools stay in the first stage"
    final = stages[-1]
    assert re.match(r"python:3\.11-slim", final)
    assert re.search(r"(?m)^USER 10001:10001$", final)
    assert re.search(r"(?m)^COPY --from=build /opt/gpubot /opt/gpubot$", final)
    assert not re.search(r"apt-get|apk add|gcc|build-essential|pip install", final)
    assert 'ENTRYPOINT ["gpubot"]' in final and 'CMD ["serve"]' in final
    for label in ("title", "description", "version", "revision", "licenses"):
        assert f"org.opencontainers.image.{label}=" in final
    ignore = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    assert ignore[ignore.index("*") :][:1] == ["*"], ".dockerignore starts from nothing"
    copied = set(re.findall(r"(?m)^COPY (?!--from)(.+) \S+$", text))
    sources = {s for line in copied for s in line.split()}
    for src in sources:
        assert f"!{src.rstrip('/')}/" in ignore or f"!{src}" in ignore, f".dockerignore drops {src}"


def test_security_scan_reports_nothing(tmp_path: Path) -> None:
    """checkov on every rendered target and on the Dockerfile; no failure outside the skips."""
    for target in TARGETS:
        (tmp_path / (target.replace("/", "_") + ".yaml")).write_text(render_text(target))
    shutil.copy(REPO / "deploy" / "Dockerfile", tmp_path / "Dockerfile")
    failed = scan(tmp_path, ["kubernetes", "dockerfile"])
    unexpected = [f for f in failed if f["check_id"] not in CHECKOV_SKIPS]
    assert not unexpected, "checkov findings:\n" + "\n".join(
        f"  {f['check_id']} {f['check_name']} ({f['resource']} in {Path(f['file_path']).name})"
        for f in unexpected
    )
    stale = set(CHECKOV_SKIPS) - {f["check_id"] for f in failed}
    assert not stale, f"skips that no longer fail, remove them: {sorted(stale)}"
