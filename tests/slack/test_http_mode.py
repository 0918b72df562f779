"""HTTP mode on a real port: signed requests in, recorded Web API and response_url calls out."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import aiohttp

from bot.report import Finding, Remediation, Report
from bot.settings import ClusterConfig
from bot.slack.hooks import Click, OfferButton, PostedOffers
from tests.slack.helpers import (
    FakeService,
    action_payload,
    click_payload,
    form,
    interaction_form,
    post,
    running_app,
    sample_report,
    settings_for,
    sign,
    slash_payload,
)
from tests.slack.mock_slack_api import MockSlackApi


def _texts(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


async def test_command_posts_progress_then_report_in_thread(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        status, text, _ = await post(app.url + "/slack/events", body, sign(body))
        assert status == 200 and text == ""
        await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
    first, second, details = mock_slack.of("chat.postMessage")
    assert "diagnosing pod ai/train-0" in first.body["text"]
    assert first.token.startswith("xoxb-")
    assert second.body["thread_ts"] == details.body["thread_ts"] == "1700000000.000001"
    assert "kubelet checkpoint holds devices of deleted pods" in _texts(second.body["blocks"])
    assert "🔴" in _texts(second.body["blocks"])
    # the evidence is the next reply, not part of the report
    assert "PodUID 9a15d2b5" not in _texts(second.body["blocks"])
    assert "PodUID 9a15d2b5 (gone)" in _texts(details.body["blocks"])
    update = mock_slack.of("chat.update")[0]
    assert update.body["ts"] == "1700000000.000001"
    assert "details in the thread" in _texts(update.body["blocks"])
    inv = service.runs[0][0]
    assert (inv.command, inv.name, inv.namespace) == ("why-pending", "train-0", "ai")
    # buttons are not wired yet: the fix is listed, marked as not enabled
    assert "remediation buttons not enabled" in _texts(second.body["blocks"])
    assert not mock_slack.of("files.getUploadURLExternal")


async def test_bad_signature_is_401_and_nothing_runs(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        status, _, _ = await post(app.url + "/slack/events", body, sign(body, secret="not-the-secret"))
        assert status == 401
        tampered = body.replace("train-0", "train-1")
        status, _, _ = await post(app.url + "/slack/events", tampered, sign(body))
        assert status == 401
        status, _, _ = await post(
            app.url + "/slack/events", body, {"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert status == 401
        await asyncio.sleep(0.05)  # give a wrongly started task a chance to show itself
        metrics = await _get(app.url + "/metrics")
    assert "gpubot_slack_rejected_signatures_total 3.0" in metrics
    assert service.runs == []
    assert not mock_slack.of("chat.postMessage") and not mock_slack.of("response_url")


async def test_malformed_signature_headers_are_401_not_500(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        good = sign(body)
        for bad in (
            {"X-Slack-Request-Timestamp": "soon"},
            {"X-Slack-Request-Timestamp": "1e9"},
            {"X-Slack-Request-Timestamp": ""},
            {"X-Slack-Signature": "v1=zz"},
        ):
            status, text, _ = await post(app.url + "/slack/events", body, {**good, **bad})
            assert status == 401, (bad, status)
            assert "Traceback" not in text
    assert service.runs == []


async def test_stale_timestamp_is_401(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        old = int(time.time()) - 5 * 60 - 30
        status, _, _ = await post(app.url + "/slack/events", body, sign(body, timestamp=old))
        assert status == 401
    assert service.runs == [] and not mock_slack.of("chat.postMessage")


async def test_retry_does_not_run_twice(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        status, _, _ = await post(app.url + "/slack/events", body, sign(body))
        assert status == 200
        for n in (1, 2):
            headers = {**sign(body), "X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason": "http_timeout"}
            status, _, _ = await post(app.url + "/slack/events", body, headers)
            assert status == 200
        await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
        # a genuinely new command (new trigger id) still runs
        again = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        await post(app.url + "/slack/events", again, sign(again))
        await mock_slack.wait_for(lambda: len(mock_slack.of("chat.update")) == 2)
        metrics = await _get(app.url + "/metrics")
    assert len(service.runs) == 2
    assert len(mock_slack.of("chat.postMessage")) == 6  # placeholder, report and evidence, twice
    assert 'gpubot_slack_duplicates_ignored_total{kind="command"} 2.0' in metrics


class _HeldKeys:
    """The shared retry memory (SQLite or the API in production), held shut until ``gate`` opens."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.keys: set[str] = set()
        self.answers = 0

    def first(self, key: str) -> bool:
        self.gate.wait(5)
        self.answers += 1
        if key in self.keys:
            return False
        self.keys.add(key)
        return True


async def test_the_ack_never_waits_for_the_shared_retry_memory(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        held = _HeldKeys()
        app.bot.recent.shared = held
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        status, text, _ = await post(app.url + "/slack/events", body, sign(body))
        # acked while the store still holds its answer, and nothing ran before it said "first"
        assert (status, text) == (200, "") and held.answers == 0 and service.runs == []
        retry = {**sign(body), "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        status, _, _ = await post(app.url + "/slack/events", body, retry)
        assert status == 200
        held.gate.set()
        await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
        metrics = await _get(app.url + "/metrics")
    assert len(service.runs) == 1
    assert 'gpubot_slack_duplicates_ignored_total{kind="command"} 1.0' in metrics


async def test_malformed_input_gets_usage_ephemeral(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    cases = {
        "why-pending": "usage: /gpu why-pending (POD | KIND/NAME)",
        "nvml Bad_Name": "usage: /gpu nvml POD",
        "node-status --bogus": "usage: /gpu node-status",
        "frobnicate": "unknown command",
        'why-pending "unbalanced -n ai': "invalid pod name",
        "x" * 3000: "input too long",
        "why-pending train-0 --cluster nowhere": "unknown cluster 'nowhere'",
    }
    async with running_app(settings_for(mock_slack), service) as app:
        for text, expected in cases.items():
            body = form(slash_payload(mock_slack, text))
            status, answer, _ = await post(app.url + "/slack/events", body, sign(body))
            assert status == 200, text
            data = json.loads(answer)
            assert data["response_type"] == "ephemeral"
            assert expected in data["text"], (text, data["text"])
    assert service.runs == []
    assert not mock_slack.of("chat.postMessage")


async def test_ack_arrives_before_the_diagnosis_starts(mock_slack: MockSlackApi) -> None:
    gate = asyncio.Event()
    service = FakeService(gate=gate)
    async with running_app(settings_for(mock_slack), service) as app:
        acks_when_run_started: list[float | None] = []
        registry = app.bot.metrics.registry
        service.on_run = lambda: acks_when_run_started.append(
            registry.get_sample_value("gpubot_slack_ack_seconds_count")
        )
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        sent = time.monotonic()
        status, _, acked = await asyncio.wait_for(post(app.url + "/slack/events", body, sign(body)), 5)
        assert status == 200
        assert acked - sent < 1.0
        # the diagnosis is still held at the gate, so the ack cannot have waited for it
        assert not mock_slack.of("chat.update")
        await mock_slack.wait_for(lambda: service.runs)
        assert service.runs[0][1] >= sent
        # the server records an ack only after writing the response; the run began after that
        assert acks_when_run_started == [1.0]
        gate.set()
        await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
        metrics = await _get(app.url + "/metrics")
    assert 'gpubot_commands_total{outcome="problem",subcommand="why-pending"} 1.0' in metrics
    assert "gpubot_slack_ack_seconds_count 1.0" in metrics
    assert 'gpubot_probe_errors_total{probe="ssh"} 1.0' in metrics


async def test_default_cluster_comes_from_the_channel(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    clusters = (ClusterConfig(name="prod"), ClusterConfig(name="lab"))
    settings = settings_for(mock_slack, clusters=clusters, channel_clusters={"C0LAB": "lab"})
    async with running_app(settings, service) as app:
        for channel, text in (
            ("C0LAB", "node-status"),
            ("C0OTHER", "node-status"),
            ("C0LAB", "node-status --cluster prod"),
        ):
            body = form(slash_payload(mock_slack, text, channel=channel))
            await post(app.url + "/slack/events", body, sign(body))
        await mock_slack.wait_for(lambda: len(service.runs) == 3)
    assert sorted(inv.cluster for inv, _ in service.runs) == ["", "lab", "prod"]


async def test_help_answers_only_the_asker(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, ""))
        await post(app.url + "/slack/events", body, sign(body))
        call = await mock_slack.wait_for(lambda: mock_slack.of("response_url"))
    assert call[0].body["response_type"] == "ephemeral"
    assert "why-pending POD" in _texts(call[0].body["blocks"])
    assert not mock_slack.of("chat.postMessage")


async def test_channel_the_bot_cannot_post_in_falls_back_to_response_url(mock_slack: MockSlackApi) -> None:
    mock_slack.failures["chat.postMessage"] = "channel_not_found"
    async with running_app(settings_for(mock_slack), FakeService()) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai", channel="D0DM"))
        await post(app.url + "/slack/events", body, sign(body))
        await mock_slack.wait_for(lambda: len(mock_slack.of("response_url")) == 3)
        metrics = await _get(app.url + "/metrics")
    assert 'gpubot_slack_api_errors_total{error="channel_not_found",method="chat.postMessage"} 1.0' in metrics
    progress, answer, details = mock_slack.of("response_url")
    assert progress.body["response_type"] == "ephemeral"
    assert answer.body["response_type"] == details.body["response_type"] == "in_channel"
    assert "kubelet checkpoint holds devices" in _texts(answer.body["blocks"])
    assert "PodUID 9a15d2b5" in _texts(details.body["blocks"])


class _Offers:
    def __init__(self) -> None:
        self.offered: list[tuple[str, str, str]] = []

    async def offer_remediation(self, report, finding, remediation, context) -> OfferButton | None:  # type: ignore[no-untyped-def]
        self.offered.append((finding.code, remediation.action, context.user_id))
        if remediation.action == "node.cordon":
            return None
        return OfferButton(f"offer-{len(self.offered)}", "Stops kubelet on the node; its pods keep running.")

    async def offers_posted(self, posted: PostedOffers) -> None:
        pass


async def test_buttons_carry_offer_ids_and_clicks_reach_the_hook(mock_slack: MockSlackApi) -> None:
    report = Report(command="why-pending", target={"kind": "Pod", "name": "p", "namespace": "ai"}, cluster="sim")
    report.add(
        Finding(
            "CHECKPOINT_ZOMBIE",
            "critical",
            "zombie",
            remediations=[
                Remediation("checkpoint.clear", {"node": "n1"}, "Cordons n1, stops kubelet, backs up the checkpoint."),
                Remediation("node.cordon", {"node": "n1"}, "Cordons n1."),
            ],
        )
    )
    offers = _Offers()
    clicks: list[Click] = []

    async def on_remediate(click: Click) -> None:
        clicks.append(click)

    async with running_app(
        settings_for(mock_slack), FakeService(report), offers=offers, on_remediate=on_remediate
    ) as app:
        body = form(slash_payload(mock_slack, "why-pending p -n ai"))
        await post(app.url + "/slack/events", body, sign(body))
        await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
        blocks = mock_slack.of("chat.postMessage")[1].body["blocks"]
        buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
        assert [b["value"] for b in buttons] == ["offer-1"]
        assert buttons[0]["confirm"]["style"] == "danger"
        confirm = buttons[0]["confirm"]["text"]["text"]
        assert "backs up the checkpoint" in confirm and "Stops kubelet on the node" in confirm  # fix, then hazards
        assert "Cordon node · n1" in _texts(blocks)  # declined offer: listed without a button

        click = interaction_form(action_payload(mock_slack, "offer-1"))
        status, _, _ = await post(app.url + "/slack/events", click, sign(click))
        assert status == 200
        status, _, _ = await post(app.url + "/slack/events", click, {**sign(click), "X-Slack-Retry-Num": "1"})
        assert status == 200
        await mock_slack.wait_for(lambda: clicks)
        bad = interaction_form(action_payload(mock_slack, "offer-1"))
        assert (await post(app.url + "/slack/events", bad, sign(bad, secret="wrong")))[0] == 401
    assert offers.offered == [
        ("CHECKPOINT_ZOMBIE", "checkpoint.clear", "U0ALICE"),
        ("CHECKPOINT_ZOMBIE", "node.cordon", "U0ALICE"),
    ]
    assert len(clicks) == 1
    click = clicks[0]
    assert (click.offer_id, click.user_id, click.channel, click.message_ts) == (
        "offer-1",
        "U0BOB",
        "C0GPU",
        "1700000000.000002",
    )
    assert click.response_url.startswith(mock_slack.base)


async def test_click_without_hook_says_not_enabled(mock_slack: MockSlackApi) -> None:
    async with running_app(settings_for(mock_slack), FakeService()) as app:
        click = interaction_form(action_payload(mock_slack, "whatever"))
        status, _, _ = await post(app.url + "/slack/events", click, sign(click))
        assert status == 200
        call = await mock_slack.wait_for(lambda: mock_slack.of("response_url"))
    assert call[0].body["text"] == "remediation buttons not enabled"
    assert call[0].body["response_type"] == "ephemeral"


async def test_health_readiness_and_metrics(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app, aiohttp.ClientSession() as session:
        async with session.get(app.url + "/healthz") as resp:
            assert resp.status == 200
        async with session.get(app.url + "/readyz") as resp:
            assert resp.status == 200
        service.started = False
        async with session.get(app.url + "/readyz") as resp:
            assert resp.status == 503
            assert (await resp.json())["failing"] == ["service"]
        async with session.get(app.url + "/metrics") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain")
            text = await resp.text()
    for name in (
        "gpubot_commands_total",
        "gpubot_command_duration_seconds",
        "gpubot_probe_errors_total",
        "gpubot_slack_ack_seconds",
        "gpubot_slack_rejected_signatures_total",
        "gpubot_slack_duplicates_ignored_total",
        "gpubot_slack_api_errors_total",
        "gpubot_slack_rate_limited_total",
        "gpubot_remediation_offers_total",
        "gpubot_remediation_approval_requests_total",
        "gpubot_remediation_approvals_total",
        "gpubot_remediation_refusals_total",
        "gpubot_remediation_action_outcomes_total",
    ):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
    # the standard collectors: the process (memory, CPU, files) and the platform
    for name in ("process_resident_memory_bytes", "process_cpu_seconds_total", "python_info"):
        assert f"\n{name}" in text, name


async def _get(url: str) -> str:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return await resp.text()


class _PostedOffers(_Offers):
    def __init__(self) -> None:
        super().__init__()
        self.posted: list[PostedOffers] = []

    async def offers_posted(self, posted: PostedOffers) -> None:
        self.posted.append(posted)


async def test_the_hook_learns_where_offers_are_and_gets_the_clicked_message(mock_slack: MockSlackApi) -> None:
    report = sample_report()
    offers = _PostedOffers()
    clicks: list[dict[str, Any]] = []

    async def on_remediate(click: Click) -> None:
        clicks.append(
            {"value": click.offer_id, "ts": click.message_ts, "blocks": click.blocks, "thread_ts": click.thread_ts}
        )

    async with running_app(
        settings_for(mock_slack), FakeService(report), offers=offers, on_remediate=on_remediate
    ) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        await post(app.url + "/slack/events", body, sign(body))
        await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
        click = interaction_form(click_payload(mock_slack, "offer-1"))
        assert (await post(app.url + "/slack/events", click, sign(click)))[0] == 200
        await mock_slack.wait_for(lambda: clicks)

    report_msg = mock_slack.message("C0GPU", "1700000000.000002")
    assert len(offers.posted) == 1
    posted = offers.posted[0]
    assert (posted.channel, posted.message_ts, posted.thread_ts) == ("C0GPU", "1700000000.000002", "1700000000.000001")
    assert posted.offer_ids == ("offer-1",) and list(posted.blocks) == report_msg["blocks"]
    expected = {"value": "offer-1", "ts": "1700000000.000002", "thread_ts": "1700000000.000001"}
    assert clicks == [{**expected, "blocks": report_msg["blocks"]}]


async def test_a_rate_limited_update_is_retried_after_retry_after(mock_slack: MockSlackApi) -> None:
    """Slack answers 429 to chat.update: the report still replaces "diagnosing…", just later."""
    mock_slack.rate_limited["chat.update"] = 1
    service = FakeService()
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
        status, _, _ = await post(app.url + "/slack/events", body, sign(body))
        assert status == 200
        await mock_slack.wait_for(lambda: len(mock_slack.of("chat.update")) >= 2, timeout=15)
        metrics = await _get(app.url + "/metrics")
    first, retried = mock_slack.of("chat.update")[:2]
    assert first.body == retried.body
    assert "details in the thread" in _texts(retried.body["blocks"])
    assert 'gpubot_slack_rate_limited_total{method="chat.update"} 1.0' in metrics
    assert "gpubot_slack_api_errors_total{" not in metrics, "the retry succeeded: no error"


async def test_a_full_limit_queues_the_diagnosis_but_not_its_ack(mock_slack: MockSlackApi) -> None:
    """max_concurrent_diagnoses=1: both commands are acked while the first diagnosis is held,
    the second waits (its placeholder says so) and runs only once the first is answered."""
    gate = asyncio.Event()
    service = FakeService(gate=gate)
    async with running_app(settings_for(mock_slack, max_concurrent_diagnoses=1), service) as app:
        updates_when_run_started: list[int] = []
        service.on_run = lambda: updates_when_run_started.append(len(mock_slack.of("chat.update")))
        first, second = (form(slash_payload(mock_slack, f"why-pending train-{i} -n ai")) for i in (0, 1))
        acks = await asyncio.wait_for(
            asyncio.gather(*(post(app.url + "/slack/events", b, sign(b)) for b in (first, second))), 10
        )
        assert [status for status, _, _ in acks] == [200, 200]
        await mock_slack.wait_for(lambda: len(mock_slack.of("chat.postMessage")) == 2 and service.runs)
        # the first holds the only slot at the gate: the second is posted as queued, not run
        assert len(service.runs) == 1
        placeholders = {c.body["text"]: c for c in mock_slack.of("chat.postMessage")}
        assert set(placeholders) == {
            "diagnosing pod ai/train-0…",
            "queued (#1 in line), then diagnosing pod ai/train-1…",
        }
        gate.set()
        await mock_slack.wait_for(
            lambda: len([u for u in mock_slack.of("chat.update") if "details" in _texts(u.body["blocks"])]) == 2
        )
    assert [inv.name for inv, _ in service.runs] == ["train-0", "train-1"]
    # the mock numbers the messages it is sent: the two placeholders came first
    placed = mock_slack.of("chat.postMessage")[:2]
    ts_of = {
        ("train-0" if "train-0" in c.body["text"] else "train-1"): f"1700000000.{i:06d}"
        for i, c in enumerate(placed, 1)
    }
    first_ts, second_ts = ts_of["train-0"], ts_of["train-1"]
    updates = [(u.body["ts"], u.body["text"]) for u in mock_slack.of("chat.update")]
    # the first's verdict, then the second's placeholder turns to "diagnosing…", then its verdict
    assert [ts for ts, _ in updates] == [first_ts, second_ts, second_ts]
    assert updates[1][1] == "diagnosing pod ai/train-1…"
    # the second diagnosis started only after the first's verdict and its own "diagnosing…"
    assert updates_when_run_started == [0, 2]
    replies = [c.body["thread_ts"] for c in mock_slack.of("chat.postMessage") if c.body.get("thread_ts")]
    assert replies == sorted(replies, key=[first_ts, second_ts].index) and set(replies) == {first_ts, second_ts}


async def test_a_command_still_queued_at_shutdown_says_it_never_ran(mock_slack: MockSlackApi) -> None:
    service = FakeService(gate=asyncio.Event())  # the first diagnosis never finishes
    settings = settings_for(mock_slack, max_concurrent_diagnoses=1, shutdown_grace_s=0.2)
    async with running_app(settings, service) as app:
        for i in (0, 1):
            body = form(slash_payload(mock_slack, f"why-pending train-{i} -n ai"))
            assert (await post(app.url + "/slack/events", body, sign(body)))[0] == 200
        await mock_slack.wait_for(lambda: len(mock_slack.of("chat.postMessage")) == 2 and service.runs)
    assert len(service.runs) == 1
    (update,) = mock_slack.of("chat.update")
    assert "queued (#1 in line)" in _texts(update.body["blocks"])
    assert update.body["text"] == "gpubot restarted before this diagnosis could start; please ask again."
