"""Private answers: ``/gpu … --private`` (or a channel whose default is private) answers only the asker.

Signed slash commands against the recording Web API: a private answer never reaches the channel
(no ``chat.postMessage``, everything through ``response_url`` as ephemeral), carries no buttons
(nothing is offered), and ``--public`` overrides a private channel's default.
"""

from __future__ import annotations

import json

import pytest

from bot.commands import parse_invocation, usage
from bot.errors import UsageError
from bot.report import Finding, Remediation, Report
from bot.slack.hooks import OfferButton, OfferContext, PostedOffers
from tests.slack.helpers import FakeService, form, post, running_app, sample_report, settings_for, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi


class _Offers:
    def __init__(self) -> None:
        self.offered: list[str] = []

    async def offer_remediation(
        self, report: Report, finding: Finding, remediation: Remediation, context: OfferContext
    ) -> OfferButton | None:
        self.offered.append(remediation.action)
        return OfferButton(f"offer-{len(self.offered)}")

    async def offers_posted(self, posted: PostedOffers) -> None:
        pass


async def _run(mock: MockSlackApi, text: str, *, channel: str = "C0GPU", **settings: object) -> _Offers:
    offers = _Offers()
    service = FakeService(sample_report())
    async with running_app(settings_for(mock, **settings), service, offers=offers) as app:
        body = form(slash_payload(mock, text, channel=channel))
        status, ack, _ = await post(app.url + "/slack/events", body, sign(body))
        assert (status, ack) == (200, "")
        await mock.wait_for(lambda: len(app.bot.tasks) == 0 and service.runs)
        await mock.wait_for(lambda: len(app.bot.tasks) == 0)
    return offers


async def test_private_answers_only_the_asker_without_buttons(mock_slack: MockSlackApi) -> None:
    offers = await _run(mock_slack, "why-pending train-0 -n ai --private")
    assert not mock_slack.of("chat.postMessage") and not mock_slack.of("chat.update")
    replies = mock_slack.of("response_url")
    assert [r.body["response_type"] for r in replies] == ["ephemeral"] * 3  # diagnosing…, report, evidence
    report = json.dumps(replies[1].body["blocks"])
    assert "kubelet checkpoint holds devices of deleted pods" in report
    named = json.dumps("Cordon, stop kubelet…")[1:-1]  # the fix list's words, as json.dumps writes them
    assert '"actions"' not in report and named in report  # named, no button
    assert "without --private" in report
    assert "PodUID 9a15d2b5" in json.dumps(replies[2].body["blocks"])
    assert offers.offered == []  # nothing offered: no pending action for a message nobody else sees


async def test_a_private_channel_default_and_public_override(mock_slack: MockSlackApi) -> None:
    await _run(mock_slack, "why-pending train-0 -n ai", channel="C0QUIET", private_channels=["C0QUIET"])
    assert not mock_slack.of("chat.postMessage")
    assert {r.body["response_type"] for r in mock_slack.of("response_url")} == {"ephemeral"}

    offers = await _run(mock_slack, "why-pending train-0 -n ai --public", channel="C0QUIET",
                        private_channels=["C0QUIET"])
    assert len(mock_slack.of("chat.postMessage")) == 3  # placeholder, report, evidence
    assert offers.offered == ["checkpoint.clear"]


def test_the_switches_are_in_the_slack_grammar_only() -> None:
    assert "[--private] [--public]" in usage("why-pending", "slack")
    assert "--private" not in usage("why-pending", "cli")
    inv = parse_invocation(["node-status", "--private"], surface="slack")
    assert inv.private is True
    assert parse_invocation(["node-status", "--private", "--public"], surface="slack").private is False
    assert parse_invocation(["node-status"], surface="slack").private is None
    with pytest.raises(UsageError, match="takes no value"):
        parse_invocation(["node-status", "--private=yes"], surface="slack")
    with pytest.raises(UsageError, match="unknown option '--private'"):
        parse_invocation(["node-status", "--private"], surface="cli")
