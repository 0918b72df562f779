"""Bad input files and values: one line naming the file, the key and what was expected, exit 2.

Each case runs the real ``gpubot`` command line in-process (``bot.cli.main``) on a file written
for it: a settings file, a kubeconfig the settings point at, a scenario file, a runbook override
folder. Never "internal error", never a traceback, never a hang: the YAML bombs and 10,000-deep
files are refused within the test's own time (the pytest timeout), not after minutes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.exit_codes import ExitCode
from bot.settings import load_settings

ALIAS_BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
)
DEEP = "x: " + "[" * 10_000 + "]" * 10_000 + "\n"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    _, err = capsys.readouterr()
    return code, err


def _one_named_line(code: int, err: str, *needles: str) -> None:
    assert code == ExitCode.CONFIG == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("dry_run: 'ture'\n", ("dry_run", "expected true or false")),
        ("dry_run: 'y'\n", ("dry_run", "expected true or false")),
        ("two_person_rule: 'enabled'\n", ("two_person_rule", "expected true or false")),
        ("dry_run: 'true'\n", ("dry_run", "expected true or false")),  # text in a file: not a boolean
        ("approvers: {'*': U0APPROVER}\n", ("approvers[*]", "expected a list of Slack user/group ids")),
        ("approvers: {'*': 5}\n", ("approvers[*]", "expected a list")),
        ("approvers: {'*': null}\n", ("approvers[*]", "expected a list")),
        ("approvers: [U0APPROVER]\n", ("approvers", "expected a mapping")),
        ("ssh_deadline_s: ten\n", ("ssh_deadline_s", "expected a number")),
        ("ssh_concurrency: 2.5\n", ("ssh_concurrency", "expected a whole number")),
        ("ssh_concurrency: true\n", ("ssh_concurrency", "expected a whole number")),
        ("namespace: [a, b]\n", ("namespace", "expected text")),
        ("slack_bot_token: {x: 1}\n", ("slack_bot_token", "expected text")),
        ("private_channels: {a: b}\n", ("private_channels", "expected a list")),
        ("channel_clusters: [a]\n", ("channel_clusters", "expected a mapping")),
        ("clusters: 5\n", ("clusters", "expected a non-empty list")),
        ("clusters: [{name: c1, in_cluster: 'yes'}]\n", ("clusters[c1].in_cluster", "expected true or false")),
        ("identity_map: 5\n", ("identity_map", "expected a mapping")),
        ("identity_map: {U0ALICE: {user: alice, groups: ml}}\n", ("identity_map[U0ALICE].groups", "expected a list")),
        ("identity_map: {U0ALICE: {user: 7}}\n", ("identity_map[U0ALICE].user", "expected a Kubernetes user")),
        ("- a\n- b\n", ("expected a mapping of settings", "got a list")),
        ("dry_run: true\ndry_run: false\n", ("line 2", "'dry_run' given twice")),
        (ALIAS_BOMB, ("alias",)),
        (DEEP, ("nested deeper than",)),
    ],
)
def test_a_bad_settings_file_is_one_named_line(
    text: str, named: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text(text, encoding="utf-8")
    code, err = _run(["--config", str(config), "help"], capsys)
    _one_named_line(code, err, f"config file {config}", *named)


def test_a_bad_environment_variable_names_the_variable_and_its_spellings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPUBOT_DRY_RUN", "ture")
    code, err = _run(["help"], capsys)
    _one_named_line(code, err, "environment variable GPUBOT_DRY_RUN", "dry_run", "1/0, yes/no, on/off")
    assert "ture" not in err  # a value is described, never echoed (it could be a token)


@pytest.mark.parametrize(
    ("spelling", "value"),
    [("true", True), ("TRUE", True), ("1", True), ("yes", True), ("On", True), ("false", False), ("0", False),
     ("NO", False), ("off", False)],
)
def test_the_documented_environment_spellings_of_a_boolean(spelling: str, value: bool) -> None:
    assert load_settings(env={"GPUBOT_DRY_RUN": spelling}).dry_run is value


def test_file_booleans_and_one_approver_list(tmp_path: Path) -> None:
    config = tmp_path / "s.yaml"
    config.write_text("dry_run: true\ntwo_person_rule: false\napprovers: {'*': [U0APPROVER]}\n", encoding="utf-8")
    settings = load_settings(env={}, config_file=str(config))
    assert settings.dry_run is True and settings.two_person_rule is False
    assert settings.approvers == {"*": ("U0APPROVER",)}


@pytest.mark.parametrize(
    ("kubeconfig", "named"),
    [
        ("garbage\n", ("expected a mapping with clusters, contexts and users",)),
        ("clusters: 5\n", ("clusters: expected a list",)),
        ("apiVersion: v1\nclusters:\n- name: x\n  cluster: 5\n", ("clusters[0].cluster: expected a mapping",)),
        ("[[[[\n", ("not valid YAML", "line 2")),
        ("apiVersion: v1\nkind: Config\ncurrent-context: nope\n", ("nope",)),
        (ALIAS_BOMB, ("alias",)),
        (DEEP, ("nested deeper than",)),
    ],
)
def test_a_garbage_kubeconfig_is_one_named_line(
    kubeconfig: str, named: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text(kubeconfig, encoding="utf-8")
    config = tmp_path / "settings.yaml"
    config.write_text(f"clusters:\n- name: c1\n  kubeconfig: {kc}\n", encoding="utf-8")
    code, err = _run(["--config", str(config), "node-status", "--json"], capsys)
    _one_named_line(code, err, "cluster c1", str(kc), *named)


def test_a_garbage_default_kubeconfig_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No kubeconfig in the settings: the one KUBECONFIG names is checked the same way."""
    kc = tmp_path / "config"
    kc.write_text("contexts: {a: b}\n", encoding="utf-8")
    monkeypatch.setenv("KUBECONFIG", str(kc))
    code, err = _run(["node-status", "--json"], capsys)
    _one_named_line(code, err, str(kc), "contexts: expected a list")


SCENARIO_HEAD = "scenario: bad\nkubernetes:\n  objects: []\n"
POD = "scenario: bad\nkubernetes:\n  objects:\n  - {apiVersion: v1, kind: Pod, "


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (ALIAS_BOMB, ("alias",)),
        ("scenario: deep\n" + DEEP, ("nested deeper than",)),
        (SCENARIO_HEAD + "nodes:\n  n1:\n    processes: [{pid: abc}]\n", ("n1.processes[0].pid", "whole number")),
        (SCENARIO_HEAD + "nodes:\n  n1:\n    gpus: 5\n", ("nodes.n1.gpus", "must be a list")),
        (SCENARIO_HEAD + "nodes:\n  n1:\n    latency_ms: fast\n", ("nodes.n1.latency_ms", "must be a number")),
        (SCENARIO_HEAD + "nodes:\n  n1:\n    kubelet_fails_start: 'yes'\n", ("kubelet_fails_start", "true or false")),
        (SCENARIO_HEAD + "api: [1]\n", ("api", "must be a mapping")),
        (SCENARIO_HEAD + "api:\n  faults:\n  - {status: often}\n", ("api.faults[0].status", "whole number")),
        (SCENARIO_HEAD + "expect:\n- {run: node-status, codes: GPU_LOST}\n", ("expect[0].codes", "list of strings")),
        (SCENARIO_HEAD + "containers:\n  a/b/c: {env: [x]}\n", ("containers.a/b/c.env", "mapping")),
        (
            POD + "metadata: {name: p, namespace: 5}}\n",
            ("kubernetes.objects[0]", "metadata.namespace: must be a string"),
        ),
        (
            POD + "metadata: {name: p}, spec: 5}\n",
            ("kubernetes.objects[0]", "spec: must be a mapping"),
        ),
    ],
)
def test_a_bad_scenario_is_one_named_line(
    text: str, named: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text, encoding="utf-8")
    code, err = _run(["why-pending", "p", "-n", "ai", "--scenario", str(scenario)], capsys)
    _one_named_line(code, err, str(scenario), *named)


def test_a_runbook_alias_bomb_is_refused_by_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB, encoding="utf-8")
    code = main(["runbooks", "validate", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and "internal error" not in out + err  # a runbook is configuration to fix
    assert "bomb.yaml:" in out and "aliases expand to more than" in out
