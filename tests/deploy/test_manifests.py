"""What the chart renders wires the bot the way its settings expect: the settings file and the
environment load with the bot's own loader, secrets are files from the Secrets users create,
the pod is locked down, the runbook ConfigMap holds only overrides, and the opt-in pieces do
what they say. Checked on every variant the chart tests render (``render.variants()``).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

import pytest

from bot.actions import ACTIONS
from bot.settings import load_settings
from tests.deploy.render import (
    REPO,
    combination_id,
    combination_values,
    find,
    merge,
    one,
    prerender,
    render,
    valid,
    variants,
)

DEPLOY_README = REPO / "deploy" / "README.md"
HTTP_ON = {"slack": {"mode": "http"}, "ingress": {"enabled": True, "host": "gpubot.example.com"}}


@pytest.fixture(scope="module")
def all_renders() -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    prerender([combination_values(c) for c in variants()], lint=False)  # lint: test_chart.py
    return {combination_id(c): (combination_values(c), render(combination_values(c))) for c in variants() if valid(c)}


def _deployment(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return one(objs, "Deployment", "gpubot")


def _container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    containers = _deployment(objs)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def _env(objs: list[dict[str, Any]]) -> dict[str, str]:
    container = _container(objs)
    assert not container.get("envFrom"), "every variable is in env, where the chart decides it"
    return {e["name"]: e["value"] for e in container.get("env", [])}


def _mounts(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """mount path -> the volume mounted there."""
    volumes = {v["name"]: v for v in _deployment(objs)["spec"]["template"]["spec"]["volumes"]}
    return {m["mountPath"]: volumes[m["name"]] for m in _container(objs)["volumeMounts"]}


def _volume_at(objs: list[dict[str, Any]], path: str) -> dict[str, Any]:
    for mount, volume in _mounts(objs).items():
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return volume
    raise AssertionError(f"{path} is not on any mounted volume")


def _image_env() -> dict[str, str]:
    """The GPUBOT_* variables the image itself sets (ENV in the Dockerfile's final stage)."""
    final = re.split(r"(?m)^FROM ", (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8"))[-1]
    return dict(re.findall(r"(GPUBOT_[A-Z_]+)=(\S+)", final))


def _load(objs: list[dict[str, Any]], tmp_path: Path) -> Any:
    """The settings the pod would load: the image's environment under the pod's, and its settings
    file; secrets left out."""
    env = {**_image_env(), **_env(objs)}
    config = one(objs, "ConfigMap", "gpubot-config")
    assert _volume_at(objs, env["GPUBOT_CONFIG"])["configMap"]["name"] == config["metadata"]["name"]
    path = tmp_path / "config.yaml"
    path.write_text(config["data"][posixpath.basename(env["GPUBOT_CONFIG"])])
    # the secret files exist only in the cluster; their paths are checked separately
    plain = {k: v for k, v in env.items() if not k.endswith("_FILE") and k != "GPUBOT_CONFIG"}
    return load_settings(env=plain, config_file=str(path))


def test_settings_of_every_variant_load(all_renders: dict[str, Any], tmp_path: Path) -> None:
    """The settings ConfigMap and env are real settings: the bot's own loader accepts them."""
    for name, (values, objs) in all_renders.items():
        settings = _load(objs, tmp_path)
        assert settings.clusters[0].in_cluster, name
        http = values.get("slack", {}).get("mode") == "http"
        assert settings.slack_mode == ("http" if http else "socket"), name
        assert settings.dry_run == (not values.get("remediation", {}).get("enabled", False)), name
        assert settings.http_port == 8080
        # config.state: kubernetes (the default): the shared state is on the API, no volume
        assert settings.state == "kubernetes", name
        assert "emptyDir" in _volume_at(objs, settings.state_path), name
        runbooks = _volume_at(objs, settings.runbook_dir)
        assert runbooks["configMap"]["name"] == "gpubot-runbooks", name
        assert settings.namespace == "gpubot", f"{name}: the bot looks for its agents in the release namespace"
        assert settings.node_access == values.get("config", {}).get("node_access", "auto"), name


def test_every_config_key_reaches_the_bot(tmp_path: Path) -> None:
    """Settings given under `config` arrive in the bot's settings, typed."""
    config = {
        "approvers": {"*": ["S0123456789"], "kubelet.restart": ["U0123456789"]},
        "two_person_rule": True,
        "command_deadline_s": 35,
        "ssh_user": "gpubot",
        "ssh_concurrency": 4,
        "channel_clusters": {"C0123": "this-cluster"},
        "log_level": "DEBUG",
        "dry_run": True,
        "http_port": 9090,
    }
    objs = render({"config": config, "remediation": {"enabled": True}})
    settings = _load(objs, tmp_path)
    assert _image_env()["GPUBOT_HTTP_PORT"] == "8080", "the image sets a port the chart must override"
    assert settings.http_port == 9090
    assert _container(objs)["ports"] == [{"name": "http", "containerPort": 9090, "protocol": "TCP"}]
    assert one(objs, "Service")["spec"]["ports"][0]["port"] == 9090
    assert one(objs, "NetworkPolicy", "gpubot")["spec"]["ingress"][0]["ports"][0]["port"] == 9090
    assert settings.approvers == {"*": ("S0123456789",), "kubelet.restart": ("U0123456789",)}
    assert settings.two_person_rule is True and settings.dry_run is True
    assert settings.command_deadline_s == 35.0 and settings.ssh_concurrency == 4
    assert settings.ssh_user == "gpubot" and settings.log_level == "DEBUG"
    assert settings.channel_clusters == {"C0123": "this-cluster"}


def test_other_clusters_read_kubeconfigs_from_their_secret(tmp_path: Path) -> None:
    clusters = [
        {"name": "here", "in_cluster": True},
        {"name": "lab", "kubeconfig": "/etc/gpubot/kubeconfigs/lab", "context": "lab-admin"},
    ]
    objs = render({"config": {"clusters": clusters}, "kubeconfigs": {"existingSecret": "gpubot-kubeconfigs"}})
    settings = _load(objs, tmp_path)
    lab = settings.cluster("lab")
    assert lab.context == "lab-admin"
    volume = _volume_at(objs, lab.kubeconfig)
    assert volume["secret"]["secretName"] == "gpubot-kubeconfigs"
    assert not any(v.get("secret", {}).get("secretName") == "gpubot-kubeconfigs" for v in _mounts(render()).values())


def test_secrets_are_files_from_the_user_created_secrets(all_renders: dict[str, Any]) -> None:
    readme = DEPLOY_README.read_text(encoding="utf-8")
    for name, (values, objs) in all_renders.items():
        env = _env(objs)
        mode = env["GPUBOT_SLACK_MODE"]
        files = {k: v for k, v in env.items() if k.endswith("_FILE")}
        wanted = {"GPUBOT_SLACK_BOT_TOKEN_FILE"} | (
            {"GPUBOT_SLACK_SIGNING_SECRET_FILE"} if mode == "http" else {"GPUBOT_SLACK_APP_TOKEN_FILE"}
        )
        assert set(files) == wanted, f"{name}: a secret file the mode does not use would fail settings loading"
        ssh = values.get("config", {}).get("node_access", "auto") == "ssh"
        ssh_paths = [env[k] for k in ("GPUBOT_SSH_KEY_PATH", "GPUBOT_SSH_KNOWN_HOSTS") if k in env]
        assert len(ssh_paths) == (2 if ssh else 0), f"{name}: the SSH key is mounted only for node_access ssh"
        assert ssh == any(v.get("secret", {}).get("secretName") == "gpubot-ssh" for v in _mounts(objs).values()), name
        for path in [*files.values(), *ssh_paths]:
            secret = _volume_at(objs, path)["secret"]
            key = posixpath.basename(path)
            assert re.search(rf"--from-\w+={re.escape(key)}=", readme), f"README never creates key {key}"
            assert f"create secret generic {secret['secretName']}" in readme
        assert not any("valueFrom" in e for e in _container(objs).get("env", []))


def test_secret_names_and_keys_come_from_the_values(tmp_path: Path) -> None:
    values = {
        "config": {"node_access": "ssh"},
        "slack": {"existingSecret": "corp-slack", "botTokenKey": "xoxb", "appTokenKey": "xapp"},
        "ssh": {
            "existingSecret": "corp-ssh",
            "privateKeyKey": "id_ed25519",
            "knownHostsKey": "hosts",
            "optional": False,
        },
    }
    objs = render(values)
    env = _env(objs)
    assert env["GPUBOT_SLACK_BOT_TOKEN_FILE"].endswith("/xoxb") and env["GPUBOT_SLACK_APP_TOKEN_FILE"].endswith("/xapp")
    assert _volume_at(objs, env["GPUBOT_SLACK_BOT_TOKEN_FILE"])["secret"]["secretName"] == "corp-slack"
    ssh = _volume_at(objs, env["GPUBOT_SSH_KEY_PATH"])["secret"]
    assert env["GPUBOT_SSH_KEY_PATH"].endswith("/id_ed25519") and env["GPUBOT_SSH_KNOWN_HOSTS"].endswith("/hosts")
    assert ssh["secretName"] == "corp-ssh" and ssh["optional"] is False
    assert _volume_at(render({"config": {"node_access": "ssh"}}), "/etc/gpubot/ssh/x")["secret"]["optional"] is True


def test_alertmanager_token_is_a_file_from_its_secret_only_when_named(tmp_path: Path) -> None:
    """alerts.existingSecret turns POST /alerts on: the token is a file, the settings load."""
    assert "GPUBOT_ALERTS_TOKEN_FILE" not in _env(render())
    values = {"alerts": {"existingSecret": "am-token", "tokenKey": "bearer"}, "config": {"alerts_channel": "C0ALERT"}}
    objs = render(values)
    path = _env(objs)["GPUBOT_ALERTS_TOKEN_FILE"]
    assert posixpath.basename(path) == "bearer"
    assert _volume_at(objs, path)["secret"]["secretName"] == "am-token"
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    settings = load_settings(
        env={**_image_env(), "GPUBOT_ALERTS_TOKEN_FILE": str(token), "GPUBOT_ALERTS_CHANNEL": "C0ALERT"}
    )
    assert settings.alerts_token and settings.alerts_channel == "C0ALERT"
    readme = DEPLOY_README.read_text(encoding="utf-8")
    assert "alerts.existingSecret" in readme and "--from-literal=token=" in readme


def test_runbook_configmap_holds_only_overrides_and_is_mounted_whole(all_renders: dict[str, Any]) -> None:
    """The image carries the built-in runbooks; the ConfigMap is the operator's overrides, empty here."""
    for name, (_, objs) in all_renders.items():
        configmap = one(objs, "ConfigMap", "gpubot-runbooks")
        assert not configmap.get("data") and not configmap.get("binaryData"), f"{name}: no runbook copies"
        volume = _volume_at(objs, _env(objs)["GPUBOT_RUNBOOK_DIR"])
        assert volume["configMap"]["name"] == configmap["metadata"]["name"]
        assert volume["configMap"].get("items") is None, "the mount must carry every override file"


def test_no_runbook_copies_under_deploy() -> None:
    """runbooks/ is the one source: no runbook file (a YAML mapping with a runbook kind) in deploy/."""
    copies = []
    for path in sorted((REPO / "deploy").rglob("*.y*ml")):
        if re.search(r"(?m)^kind: (findings|diagnosis|guidance)\s*$", path.read_text(encoding="utf-8")):
            copies.append(str(path.relative_to(REPO)))
    assert copies == [], "runbooks are shipped in the package; override them with a ConfigMap (deploy/README.md)"


def test_a_changed_setting_or_override_restarts_the_pod() -> None:
    """The bot reads both only at start: the pod template carries their checksums."""

    def annotations(values: dict[str, Any]) -> dict[str, str]:
        return dict(_deployment(render(values))["spec"]["template"]["metadata"]["annotations"])

    base = annotations({})
    assert annotations({"config": {"two_person_rule": True}})["checksum/config"] != base["checksum/config"]
    changed = annotations({"runbookOverrides": {"guide-ours.yaml": "x: 1\n"}})
    assert changed["checksum/runbooks"] != base["checksum/runbooks"]
    assert changed["checksum/config"] == base["checksum/config"]


def test_deployment_is_locked_down(all_renders: dict[str, Any]) -> None:
    for name, (_, objs) in all_renders.items():
        spec = _deployment(objs)["spec"]
        assert spec["replicas"] == 2, name  # config.state: kubernetes; sqlite: 1 (tests/replicas/test_crds.py)
        assert spec["strategy"]["type"] == "RollingUpdate"
        pod = spec["template"]["spec"]
        assert pod["serviceAccountName"] == "gpubot"
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        container = _container(objs)
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
        assert writable == {"/var/lib/gpubot", "/tmp"}, name
        service = one(objs, "Service", "gpubot")
        assert [p["name"] for p in service["spec"]["ports"]] == ["http"]
        assert service["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()
        assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize("remediation", [False, True], ids=["read-only", "remediation"])
def test_shutdown_waits_long_enough_for_what_the_pod_may_run(remediation: bool, tmp_path: Path) -> None:
    """SIGTERM waits for diagnoses (``shutdown_grace_s``) and, with remediation on, for a running
    action up to its own maximum: the pod's grace period must cover it, or a rollout kills a
    kubelet restart mid-way."""
    objs = render({"remediation": {"enabled": True}} if remediation else None)
    settings = _load(objs, tmp_path)
    grace = _deployment(objs)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > settings.shutdown_grace_s
    if not settings.dry_run:
        longest = max(a.max_duration_s(settings) for a in ACTIONS.values())
        assert grace > longest, f"{grace} s grace, an action may take {longest:.0f} s"


def test_http_mode_publishes_only_the_slack_endpoint() -> None:
    ingress = one(render(HTTP_ON), "Ingress", "gpubot")
    paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/slack/events", "Exact")]
    assert ingress["spec"]["tls"] == [{"hosts": ["gpubot.example.com"], "secretName": "gpubot-tls"}]
    assert ingress["spec"]["rules"][0]["host"] == "gpubot.example.com"
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] == {"name": "http"}
    assert not find(render(), "Ingress")
    assert not find(render({"slack": {"mode": "http"}}), "Ingress"), "the Ingress is opt-in (TLS may end elsewhere)"
    custom = one(render(merge(HTTP_ON, {"ingress": {"className": "nginx", "tlsSecretName": ""}})), "Ingress")
    assert custom["spec"]["ingressClassName"] == "nginx" and "tls" not in custom["spec"]


def test_tke_qgpu_keeps_the_bot_off_qgpu_nodes() -> None:
    objs = render({"tkeQgpu": {"enabled": True}, "config": {"state": "sqlite"}})
    pod = _deployment(objs)["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    exprs = [e for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]]
    assert {"key": "qgpu-device-enable", "operator": "NotIn", "values": ["enable"]} in exprs
    assert one(objs, "PersistentVolumeClaim")["spec"]["resources"]["requests"]["storage"] == "10Gi"
    sqlite = {"config": {"state": "sqlite"}}
    assert one(render(sqlite), "PersistentVolumeClaim")["spec"]["resources"]["requests"]["storage"] == "1Gi"
    sized = render({**sqlite, "tkeQgpu": {"enabled": True}, "persistence": {"size": "20Gi", "storageClassName": "cbs"}})
    pvc = one(sized, "PersistentVolumeClaim")["spec"]
    assert pvc["resources"]["requests"]["storage"] == "20Gi" and pvc["storageClassName"] == "cbs"
    assert (
        "requiredDuringSchedulingIgnoredDuringExecution"
        not in (_deployment(render())["spec"]["template"]["spec"]["affinity"]["nodeAffinity"])
    )


def test_network_policy_admits_only_the_http_port() -> None:
    policy = one(render(), "NetworkPolicy", "gpubot")
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": 8080}]}]
    pod_labels = _deployment(render())["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert not find(render({"networkPolicy": {"enabled": False}}), "NetworkPolicy")


def test_image_tag_digest_and_pull_secrets() -> None:
    image = _container(render({"image": {"repository": "r.example/gpubot", "tag": "1.2.3"}}))["image"]
    assert image == "r.example/gpubot:1.2.3"
    digest = "sha256:" + "a" * 64
    assert _container(render({"image": {"tag": "1.2.3", "digest": digest}}))["image"].endswith(f"gpubot@{digest}")
    pod = _deployment(render({"imagePullSecrets": [{"name": "regcred"}]}))["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]


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


def test_pod_and_object_extras_land_where_they_belong() -> None:
    values = {
        "nodeSelector": {"pool": "system"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}],
        "priorityClassName": "system-cluster-critical",
        "podAnnotations": {"team": "gpu-sre"},
        "podLabels": {"cost-center": "gpu"},
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}
            ]}}
        },
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.corp:3128"}],
        "serviceAccount": {"annotations": {"iam.example.com/role": "gpubot"}},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
        "metrics": {"serviceMonitor": {
            "enabled": True, "interval": "1m", "labels": {"release": "old", "team": "sre"},
            "additionalLabels": {"release": "prom"},
        }},
        "slack": {"mode": "http"},
        "ingress": {"enabled": True, "host": "bot.example.com", "annotations": {"a.example.com/x": "z"}},
    }
    objs = render(values)
    template = _deployment(objs)["spec"]["template"]
    pod = template["spec"]
    assert pod["nodeSelector"] == values["nodeSelector"] and pod["tolerations"] == values["tolerations"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert template["metadata"]["annotations"]["team"] == "gpu-sre"
    assert template["metadata"]["labels"]["cost-center"] == "gpu"
    assert "cost-center" not in _deployment(objs)["spec"]["selector"]["matchLabels"], "never on the selector"
    node_affinity = pod["affinity"]["nodeAffinity"]
    assert node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] == values["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"], "the chart's own preference stays"
    assert pod["affinity"]["podAntiAffinity"], "and so does the replica spread"
    assert _container(objs)["env"][-1] == values["extraEnv"][0]
    assert _container(objs)["resources"] == values["resources"]
    assert one(objs, "ServiceAccount")["metadata"]["annotations"] == {"iam.example.com/role": "gpubot"}
    monitor = one(objs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom" and monitor["spec"]["endpoints"][0]["interval"] == "1m"
    assert monitor["metadata"]["labels"]["team"] == "sre", "labels: the deprecated alias still applies"
    assert one(objs, "Ingress")["metadata"]["annotations"] == {"a.example.com/x": "z"}
    plain = _deployment(render())["spec"]["template"]["spec"]
    assert not {"nodeSelector", "tolerations", "priorityClassName", "imagePullSecrets"} & set(plain)
