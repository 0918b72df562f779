"""``gpubot doctor`` end to end: against simulator scenarios (its API answers the access reviews from
the scenario's ``rbac_bot:`` rules and refuses the bot's own requests by them) and a recording mock
of Slack's Web API. Each broken installation is named, with a fix, and exits 4; a healthy one
exits 0; a doctor that could not read exits 3.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.doctor.result import CheckLine, DoctorReport
from bot.doctor.run import run_doctor_on_scenario
from bot.errors import KubeApiError
from bot.exit_codes import ExitCode
from bot.probes.clients import KubeClients
from bot.settings import Settings, load_settings
from bot.sim.cluster import SimCluster
from bot.slack.scopes import BOT_SCOPES
from tests.slack.mock_slack_api import MockSlackApi

DATA = Path(__file__).resolve().parents[1] / "data" / "doctor"
BOT_TOKEN = "xoxb-doctor-test-0000000000"  # noqa: S105 - a test token for the mock Slack
APP_TOKEN = "xapp-doctor-test-0000000000"  # noqa: S105


@pytest.fixture
async def slack() -> AsyncIterator[MockSlackApi]:
    mock = await MockSlackApi().start()
    mock.scopes = ",".join(sorted(BOT_SCOPES))
    try:
        yield mock
    finally:
        await mock.stop()


def _settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {"node_access": "agent", "dry_run": True, "ssh_deadline_s": 5.0}
    values.update(overrides)
    return load_settings(env={}, **values)


def _slack_settings(mock: MockSlackApi, **overrides: Any) -> Settings:
    return _settings(slack_bot_token=BOT_TOKEN, slack_app_token=APP_TOKEN, slack_api_url=mock.api_url, **overrides)


async def _doctor(name: str, settings: Settings | None = None) -> DoctorReport:
    return await run_doctor_on_scenario(settings or _settings(), str(DATA / f"{name}.yaml"))


def _check(report: DoctorReport, name: str) -> CheckLine:
    found = [c for c in report.checks if c.name == name]
    assert len(found) == 1, [c.name for c in report.checks]
    return found[0]


def _failed(report: DoctorReport) -> set[str]:
    return {c.name for c in report.broken}


async def test_a_healthy_installation_exits_0_and_checks_slack(slack: MockSlackApi) -> None:
    report = await _doctor("healthy", _slack_settings(slack, dry_run=False, state="kubernetes"))
    assert report.exit_code == ExitCode.OK, [c for c in report.checks if c.status not in ("ok", "skip")]
    names = [c.name for c in report.checks]
    assert names[:2] == ["api", "rbac.reads"]
    for name in ("rbac.agent-exec", "rbac.state", "rbac.remediation", "crds", "agents", "node-reads",
                 "slack.bot-token", "slack.app-token"):
        assert _check(report, name).status == "ok", _check(report, name)
    assert "all 4 GPU nodes" in _check(report, "agents").text
    assert [c.token for c in slack.of("auth.test")] == [BOT_TOKEN]
    assert [c.token for c in slack.of("apps.connections.open")] == [APP_TOKEN]


async def test_a_broken_rbac_names_each_refused_permission() -> None:
    report = await _doctor("broken-rbac")
    assert report.exit_code == ExitCode.FINDINGS
    assert _failed(report) == {"rbac.reads"}
    line = _check(report, "rbac.reads")
    assert "refused" in line.text
    refused = "\n".join(line.details)
    for perm in ("list core/events", "list core/resourcequotas", "list batch/jobs", "get batch/jobs"):
        assert perm in refused
    assert "list core/nodes" not in refused and "needed by bot/probes/kube.py" in refused
    assert "gpubot-readonly" in line.fix and "kubectl auth can-i" in line.fix


async def test_a_forbidden_exec_is_named_twice_by_rbac_and_by_the_read() -> None:
    report = await _doctor("forbidden-exec")
    assert report.exit_code == ExitCode.FINDINGS
    assert _failed(report) == {"rbac.agent-exec", "node-reads"}
    assert "create pods/exec in namespace gpubot" in _check(report, "rbac.agent-exec").text
    reads = _check(report, "node-reads")
    assert "exec refused (403)" in reads.text and "gpubot-node-agent-exec" in reads.fix


async def test_the_bots_own_requests_are_refused_by_rbac_bot() -> None:
    """The simulator refuses what rbac_bot does not grant, not only in the access reviews."""
    async with SimCluster.from_file(DATA / "broken-rbac.yaml") as sim:
        clients = KubeClients(sim.settings())
        try:
            reads = clients.for_cluster("").reader
            assert await reads.list_nodes()
            with pytest.raises(KubeApiError) as exc:
                await reads.list_resourcequotas("ai")
            assert exc.value.status == 403
        finally:
            await clients.close()


async def test_a_missing_agent_names_each_node_and_why() -> None:
    report = await _doctor("missing-agent")
    assert report.exit_code == ExitCode.FINDINGS
    assert _failed(report) == {"agents"}
    line = _check(report, "agents")
    assert "3 of 4 GPU nodes" in line.text
    details = dict(d.split(": ", 1) for d in line.details)
    assert set(details) == {"gpu-ok-2", "gpu-refused", "gpu-rekeyed"}
    assert details["gpu-ok-2"].startswith("not scheduled")
    assert details["gpu-refused"].startswith("Pending")
    assert details["gpu-rekeyed"].startswith("crash-looping")
    assert "describe pod" in line.fix and "gpuNodes" in line.fix
    # the read still goes through the one Ready agent
    assert _check(report, "node-reads").status == "ok" and "gpu-ok-1" in _check(report, "node-reads").text


async def test_a_bad_slack_token_is_named_and_never_shown(slack: MockSlackApi) -> None:
    slack.failures["auth.test"] = "invalid_auth"
    report = await _doctor("healthy", _slack_settings(slack))
    assert report.exit_code == ExitCode.FINDINGS
    assert _failed(report) == {"slack.bot-token"}
    line = _check(report, "slack.bot-token")
    assert "invalid_auth" in line.text and "bot-token" in line.fix
    assert BOT_TOKEN not in json.dumps(report.to_dict()) and APP_TOKEN not in json.dumps(report.to_dict())


async def test_a_missing_slack_scope_is_named(slack: MockSlackApi) -> None:
    slack.scopes = ",".join(sorted(BOT_SCOPES - {"usergroups:read"}))
    report = await _doctor("healthy", _slack_settings(slack))
    assert _failed(report) == {"slack.bot-token"} and report.exit_code == ExitCode.FINDINGS
    line = _check(report, "slack.bot-token")
    assert "lacks scope(s): usergroups:read" in line.text and "reinstall" in line.fix


async def test_a_refused_app_token_and_alerts_without_a_token(slack: MockSlackApi) -> None:
    slack.failures["apps.connections.open"] = "invalid_auth"
    report = await _doctor("healthy", _slack_settings(slack, alerts_channel="C0ALERTS"))
    assert _failed(report) == {"slack.app-token", "alerts"}
    assert "alerts_token" in _check(report, "alerts").text


async def test_an_api_server_that_fails_makes_the_answer_incomplete(tmp_path: Path) -> None:
    scenario = tmp_path / "down.yaml"
    scenario.write_text(
        f"scenario: doctor-api-down\nbase: {DATA / 'healthy.yaml'}\n"
        "api:\n  faults:\n    - {match: /version, status: 503}\n",
        encoding="utf-8",
    )
    report = await run_doctor_on_scenario(_settings(), str(scenario))
    assert report.exit_code == ExitCode.INCOMPLETE
    assert _check(report, "api").status == "unknown" and "503" in _check(report, "api").text
    assert not any(c.name.startswith("rbac") for c in report.checks)  # nothing concluded from it


def test_cli_doctor_json_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--scenario", str(DATA / "missing-agent.yaml"), "--node-access", "agent", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == ExitCode.FINDINGS == out["exit_code"]
    assert [c["check"] for c in out["checks"] if c["status"] == "fail"] == ["agents"]
    assert main(["doctor", "--scenario", str(DATA / "healthy.yaml"), "--node-access", "agent"]) == 0
    text = capsys.readouterr().out
    assert "everything checked works" in text and "agents: a gpubot-node agent is Ready" in text
    assert main(["doctor", "--scenario", str(DATA / "nope.yaml")]) == ExitCode.USAGE
    assert "scenario file not found" in capsys.readouterr().err


async def test_a_missing_runtime_class_is_named_with_the_agents_it_keeps_away() -> None:
    report = await _doctor("no-runtime-class")
    assert report.exit_code == ExitCode.FINDINGS
    assert _failed(report) == {"agents", "runtime-class"}
    line = _check(report, "runtime-class")
    assert "RuntimeClass nvidia does not exist" in line.text and "nodeAgent.runtimeClassName" in line.fix
    assert "4 of 4 GPU nodes" in _check(report, "agents").text
    assert _check(report, "node-reads").status == "skip"


async def test_the_agents_kubelet_state_comes_from_the_lease_without_host_systemd(tmp_path: Path) -> None:
    scenario = tmp_path / "no-systemd.yaml"
    names = ("gpu-ok-1", "gpu-ok-2", "gpu-refused", "gpu-rekeyed")
    nodes = "".join(f"  {n}: {{agent_systemd: false}}\n" for n in names)
    text = f"scenario: doctor-no-systemd\nbase: {DATA / 'healthy.yaml'}\nnodes:\n{nodes}"
    scenario.write_text(text, encoding="utf-8")
    report = await run_doctor_on_scenario(_settings(), str(scenario))
    reads = _check(report, "node-reads")
    assert reads.status == "ok" and "kubelet active (from its Lease)" in reads.text
    assert "nvidia-smi from the agent's RuntimeClass" in reads.text


def test_no_cluster_to_check_is_incomplete_and_slack_is_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text(f"clusters: [{{name: c, kubeconfig: {tmp_path / 'missing'}}}]\n", encoding="utf-8")
    assert main(["--config", str(config), "doctor", "--json"]) == ExitCode.INCOMPLETE
    out = json.loads(capsys.readouterr().out)
    assert [(c["check"], c["status"]) for c in out["checks"]] == [("api", "unknown"), ("slack", "skip"),
                                                                  ("alerts", "skip")]
