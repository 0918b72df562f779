"""Every Slack message builder, fed cluster and alert data that tries to ping, link and format.

A label, an event message, a node or pod name, an annotation or a group key can hold
``<!channel>``, ``<@U…>`` or ``<http://evil|innocent>``; in a mrkdwn field (blocks, and the
notification ``text``, which Slack parses too) that pings a channel or hides a link. Each builder
gets the same hostile corpus in every field it reads, and nothing may survive unescaped: the only
``<…>`` left are the mentions gpubot makes on purpose (the clicker, the approvers).

The builders are enumerated from ``bot.slack`` itself (any public function that returns a
``Rendered``, a ``Block`` or whose name ends in ``_text``): a new builder that is neither exercised
here nor listed as exempt (with why) fails ``test_every_builder_is_exercised``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

import bot.slack
from bot.proactive.alerts import AlertGroup, parse_payload
from bot.proactive.problems import Problem
from bot.remediation.outcomes import ClickOutcome
from bot.remediation.policy import Approvers
from bot.report import CardRow, Finding, NodeRow, Remediation, Report, Skipped
from bot.report.pending import PendingAnswer, PendingGroup, PendingLine
from bot.report.story import PodStory, StoryCondition, StoryContainer, StoryEvent, StoryOwner
from bot.slack import alert_messages, blocks, offer_messages, pending_blocks, proactive_messages
from bot.slack.blocks import Rendered
from bot.slack.hooks import OfferButton
from bot.state.records import PendingAction
from bot.views.groups import fix_key

#: what cluster and alert data may hold: mentions, a disguised link, entities, mrkdwn formatting
HOSTILE = (
    "<!channel> <!here> <!everyone> <@U123> <#C123|general> <!subteam^S1|@oncall> <http://x|y> "
    "<mailto:a@b.c|mail> & &amp; *bold* _x_ ~x~ `tick` ```fence``` >quote"
)
#: the mentions gpubot itself makes (the clicker, the configured approvers, the snoozer)
CLICKER, APPROVER, APPROVER_GROUP = "U0CLICKER", "U0APPROVER", "S0APPROVERS"
INTENDED = (f"<@{CLICKER}>", f"<@{APPROVER}>", f"<!subteam^{APPROVER_GROUP}>")
NOW = datetime(2026, 5, 7, 10, 0, tzinfo=UTC)


def report() -> Report:
    rem = Remediation(action="kubelet.restart", params={"node": HOSTILE}, summary=HOSTILE)
    first = Finding(
        code="CHECKPOINT_ZOMBIE", severity="critical", title=HOSTILE, evidence=[HOSTILE], explanation=HOSTILE,
        next_steps=[HOSTILE], remediations=[rem], subject=f"node/{HOSTILE}",
    )
    second = Finding(
        code="LEAK_LOGICAL_NOT_PHYSICAL", severity="warning", title=HOSTILE + " 2", evidence=[HOSTILE],
        explanation=HOSTILE, next_steps=[HOSTILE], remediations=[Remediation("pod.delete", {"pod": HOSTILE}, HOSTILE)],
    )
    card = CardRow(index=0, uuid=HOSTILE, name=HOSTILE, verdict=HOSTILE, pods=[HOSTILE])
    node = NodeRow(
        node=HOSTILE, ready=False, cordoned=True, taints=[HOSTILE],
        logical={HOSTILE: {"requested": 1, "allocatable": 2}}, ssh=HOSTILE, notes=[HOSTILE], gpus=[card],
        pods=[HOSTILE], components=[HOSTILE],
    )
    return Report(
        command="why-pending", target={"kind": "Pod", "namespace": HOSTILE, "name": HOSTILE},
        findings=[first, second], skipped=[Skipped(HOSTILE, HOSTILE)], cluster=HOSTILE, nodes=[node],
        text=HOSTILE, read_as=HOSTILE,
    )


def pending_report() -> Report:
    """A ``pending`` answer with hostile text in every field the list shows (and a read failure)."""
    line = PendingLine(namespace=HOSTILE, workload=HOSTILE, pods=2, age=HOSTILE, code=HOSTILE, fix=HOSTILE)
    like = PendingLine(namespace=HOSTILE, workload=HOSTILE, pods=1, age="3d", code=HOSTILE, fix=HOSTILE,
                       diagnosed=False)
    group = PendingGroup(code=HOSTILE, severity="critical", title=HOSTILE, lines=[line] * 6 + [like])
    answer = PendingAnswer(namespace=HOSTILE, groups=[group] * 14, undiagnosed=[line] * 7, undiagnosed_why=HOSTILE,
                           stuck_pods=99, workloads=9, diagnoses=1, bound=1)
    out = report()
    out.command, out.text, out.pending = "pending", "", answer
    return out


def storied() -> Report:
    """A report whose pod story carries hostile text in every field the story block shows."""
    out = report()
    condition = StoryCondition(HOSTILE, "False", HOSTILE, HOSTILE, HOSTILE)
    out.story = PodStory(
        pod=HOSTILE, phase=HOSTILE, status=HOSTILE, scheduler=HOSTILE, node=HOSTILE, gates=[HOSTILE],
        conditions=[condition],
        containers=[StoryContainer(HOSTILE, False, HOSTILE, HOSTILE, HOSTILE, 1, termination_tail=HOSTILE)],
        owners=[StoryOwner(HOSTILE, HOSTILE, [condition])],
        events=[StoryEvent(HOSTILE, "Warning", HOSTILE, HOSTILE, HOSTILE, 3, HOSTILE)],
    )
    return out


def offers() -> dict[Any, OfferButton]:
    return {fix_key("kubelet.restart", {"node": HOSTILE}): OfferButton("offer-1", blast_radius=HOSTILE)}


def problem(title: str = HOSTILE) -> Problem:
    return Problem(
        fingerprint="0" * 20, cluster=HOSTILE, code="CHECKPOINT_ZOMBIE", severity="critical",
        subject=f"node/{HOSTILE}", title=title, evidence=(HOSTILE, title),
    )


def alert_group(count: int) -> AlertGroup:
    alerts = [
        {"status": "firing", "labels": {"alertname": HOSTILE, "Hostname": HOSTILE, HOSTILE: HOSTILE},
         "annotations": {"summary": HOSTILE, "description": HOSTILE}}
        for _ in range(count)
    ]
    body = {"version": "4", "groupKey": HOSTILE, "status": "firing", "receiver": HOSTILE, "truncatedAlerts": 3,
            "commonLabels": {"alertname": HOSTILE}, "alerts": alerts}
    return parse_payload(json.dumps(body).encode())


def record() -> PendingAction:
    return PendingAction(
        id="a1", action=HOSTILE, params={"node": HOSTILE}, cluster=HOSTILE, requested_by=CLICKER,
        created_at=NOW, expires_at=NOW, channel="C0GPU", result_summary=HOSTILE, finding_code=HOSTILE,
    )


APPROVERS = Approvers(users=frozenset({APPROVER}), groups=frozenset({APPROVER_GROUP}))
Output = Rendered | list[Any] | dict[str, Any] | str

#: (module, function) -> how to call it with hostile data in every field it reads
BUILDERS: dict[tuple[str, str], Callable[[], Output]] = {
    ("alert_messages", "render_group"): lambda: [
        alert_messages.render_group(alert_group(3), report()),
        alert_messages.render_group(alert_group(alert_messages.SUMMARY_OVER + 1), None),
    ],
    ("blocks", "render_report"): lambda: [
        blocks.render_report(report(), offers=offers()),
        blocks.render_report(report(), private=True),
    ],
    ("blocks", "render_details"): lambda: blocks.render_details(report()),
    ("pending_blocks", "render_pending"): lambda: [
        pending_blocks.render_pending(pending_report()),
        blocks.render_report(pending_report()),
        blocks.render_summary(pending_report(), in_thread=True),
    ],
    ("pending_blocks", "cause_section"): lambda: pending_blocks.cause_section(1, pending_report().pending.groups[0]),  # type: ignore[union-attr]
    ("pending_blocks", "pending_summary_text"): lambda: pending_blocks.pending_summary_text(pending_report()),
    ("blocks", "render_summary"): lambda: blocks.render_summary(report(), in_thread=True),
    ("blocks", "render_progress"): lambda: blocks.render_progress(HOSTILE, CLICKER, HOSTILE, queued=2),
    ("blocks", "render_progress_failed"): lambda: blocks.render_progress_failed(
        blocks.render_progress(HOSTILE, CLICKER, HOSTILE), HOSTILE
    ),
    ("blocks", "paginate_text"): lambda: blocks.paginate_text(HOSTILE + "\n" + HOSTILE, title=HOSTILE),
    ("blocks", "group_blocks"): lambda: blocks.group_blocks(
        0, blocks.group_findings(report().findings)[0], offers(), why_none=HOSTILE
    ),
    ("blocks", "story_block"): lambda: blocks.story_block(storied()),
    ("blocks", "verdict_block"): lambda: blocks.verdict_block(blocks.verdict(report())),  # type: ignore[arg-type]
    ("proactive_messages", "render_open"): lambda: proactive_messages.render_open(
        problem(), opened_at=NOW, seen_at=NOW, owner=CLICKER
    ),
    ("proactive_messages", "render_resolved"): lambda: proactive_messages.render_resolved(
        problem(), opened_at=NOW, resolved_at=NOW
    ),
    ("proactive_messages", "render_change"): lambda: proactive_messages.render_change(
        problem("before " + HOSTILE), problem()
    ),
    ("proactive_messages", "render_held"): lambda: proactive_messages.render_held([problem(), problem()], limit=3),
    ("proactive_messages", "render_resolved_reply"): lambda: proactive_messages.render_resolved_reply(
        problem(), opened_at=NOW, resolved_at=NOW
    ),
    ("proactive_messages", "render_snoozed"): lambda: proactive_messages.render_snoozed(CLICKER, NOW),
    ("offer_messages", "approval_request_blocks"): lambda: [
        offer_messages.approval_request_blocks(record(), CLICKER, APPROVERS, first_approval=f, blast_radius=HOSTILE)
        for f in (True, False)
    ],
    ("offer_messages", "asked_text"): lambda: offer_messages.asked_text(
        record(), APPROVERS, first_approval=True, user_id=CLICKER
    ),
    ("offer_messages", "running_text"): lambda: offer_messages.running_text(record(), CLICKER, NOW, dry_run=True),
    ("offer_messages", "expired_text"): lambda: offer_messages.expired_text(record()),
    ("offer_messages", "denied_text"): lambda: offer_messages.denied_text(record(), CLICKER),
    ("offer_messages", "final_text"): lambda: offer_messages.final_text(
        ClickOutcome(status="succeeded", message=HOSTILE, action=record(), steps=(HOSTILE,)), CLICKER
    ),
    ("offer_messages", "steps_text"): lambda: offer_messages.steps_text([HOSTILE, HOSTILE]),
    ("offer_messages", "interrupted_text"): lambda: offer_messages.interrupted_text(record()),
}

#: builders that never see cluster or alert data, or take text their caller already escaped
EXEMPT: dict[tuple[str, str], str] = {
    ("block_kit", "section"): "a Block Kit primitive: takes mrkdwn its caller escaped",
    ("block_kit", "context"): "a Block Kit primitive: takes mrkdwn its caller escaped",
    ("block_kit", "header"): "plain_text: Slack never parses mentions or links in it",
    ("blocks", "confirm_text"): "a confirmation dialog's plain_text",
    ("blocks", "remediation_button"): "plain_text only (label, dialog); render_report shows it above",
    ("blocks", "remediation_picker"): "plain_text only (placeholder, options, dialog); render_report shows it",
    ("offer_messages", "status_block"): "a primitive: takes a status line built by *_text above",
    ("offer_messages", "replace_offer"): "swaps in a status line built by *_text above",
    ("offer_messages", "settle_request"): "swaps in a status line built by *_text above",
    ("proactive_messages", "snooze_buttons"): "buttons with fixed labels and a hex fingerprint",
    ("plaintext", "full_text"): "the attached .txt file, never mrkdwn",
    ("web", "failure_text"): "a log line, never posted",
}


def enumerated_builders() -> set[tuple[str, str]]:
    """Every public function in ``bot.slack`` that builds a message or a message's text."""
    found = set()
    for info in pkgutil.iter_modules(bot.slack.__path__):
        module = importlib.import_module(f"bot.slack.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__ or name.startswith("_"):
                continue
            returns = str(fn.__annotations__.get("return", ""))
            if "Rendered" in returns or "Block" in returns or name.endswith("_text"):
                found.add((info.name, name))
    return found


def test_every_builder_is_exercised() -> None:
    missing = enumerated_builders() - set(BUILDERS) - set(EXEMPT)
    assert not missing, f"message builders not fed the hostile corpus (add them to BUILDERS): {sorted(missing)}"


def mrkdwn_strings(out: Output) -> Iterator[str]:
    """Every string Slack parses as mrkdwn: mrkdwn text objects, and each message's ``text``."""
    if isinstance(out, str):
        yield out
    elif isinstance(out, Rendered):
        yield out.text
        yield from mrkdwn_strings(out.blocks)
    elif isinstance(out, list):
        for item in out:
            yield from mrkdwn_strings(item)
    elif isinstance(out, dict):
        if out.get("type") == "mrkdwn":
            yield str(out["text"])
        for value in out.values():
            if isinstance(value, dict | list):
                yield from mrkdwn_strings(value)


_ENTITY = re.compile(r"&(?!amp;|lt;|gt;)")


@pytest.mark.parametrize("key", sorted(BUILDERS), ids=lambda k: f"{k[0]}.{k[1]}")
def test_hostile_data_never_pings_links_or_breaks_entities(key: tuple[str, str]) -> None:
    texts = list(mrkdwn_strings(BUILDERS[key]()))
    assert texts, key
    for text in texts:
        bare = text
        for mention in INTENDED:
            bare = bare.replace(mention, "")
        assert "<" not in bare and ">" not in bare, f"{key}: unescaped control character in {text!r}"
        assert not _ENTITY.search(text), f"{key}: a bare & in {text!r}"


def test_the_corpus_reaches_the_messages_escaped() -> None:
    """Not vacuous: the builders that show data show it, as its escaped text."""
    escaped = "&lt;!channel&gt;"
    quiet = {("proactive_messages", "render_snoozed"), ("proactive_messages", "render_resolved_reply")}
    for key, build in BUILDERS.items():
        shown = "\n".join(mrkdwn_strings(build()))
        assert (escaped in shown) != (key in quiet), key


def test_the_notification_text_of_an_alert_is_escaped() -> None:
    """Issue 29 F4: ``🔥 <!channel> Xid <@U0BOSS>: 1 firing of 1`` reached the notification."""
    body = {"version": "4", "groupKey": "k", "status": "firing",
            "alerts": [{"status": "firing", "labels": {"alertname": "<!channel> Xid <@U0BOSS>"}}]}
    msg = alert_messages.render_group(parse_payload(json.dumps(body).encode()), None)
    assert msg.text == "🔥 &lt;!channel&gt; Xid &lt;@U0BOSS&gt;: 1 firing of 1"
