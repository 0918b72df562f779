"""How the watch's posts look: an open problem, what changed, and a resolved one.

One message per open problem, edited in place; the thread carries the changes. The renderers take
plain values (a ``Problem``, times) and return a ``Rendered``; they decide words and layout only,
never when to post (``bot.proactive.watcher`` does). Every string passes through ``limits``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.proactive.problems import Problem
from bot.proactive.routing import owner_of
from bot.slack import limits as L
from bot.slack.blocks import Block, Rendered, context, header, section, severity_marker


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def lasted(duration: timedelta) -> str:
    """A short human duration: ``2 h 5 min``, ``4 min``, ``under a minute``."""
    minutes = int(duration.total_seconds() // 60)
    if minutes < 1:
        return "under a minute"
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{mins} min" if mins else ""]
    return " ".join(p for p in parts if p)


def _evidence(problem: Problem) -> str:
    lines = [f"• {L.escape_mrkdwn(e)}" for e in problem.evidence]
    return L.clip_lines("\n".join(lines), L.MAX_SECTION_TEXT) if lines else ""


def owner_mention(owner: str) -> str:
    """A validated owner (``bot.proactive.routing.owner_of``) as Slack shows it: a user id or a
    user-group id as a mention, a handle as plain text; anything else as nothing."""
    if owner_of(owner) != owner or not owner:
        return ""
    if owner.startswith("@"):
        return L.escape_mrkdwn(owner)
    if owner.startswith("S"):
        return f"<!subteam^{owner}>"
    return f"<@{owner}>"


def render_open(problem: Problem, *, opened_at: datetime, seen_at: datetime, owner: str = "") -> Rendered:
    """The problem's one message while it is open; ``owner`` (validated) is named under the title."""
    title = f"{severity_marker(problem.severity)} {problem.cluster}: {problem.title}"
    blocks = [header(title), section(f"*{L.escape_mrkdwn(problem.title)}*  `{problem.code}`")]
    mention = owner_mention(owner)
    if mention:
        blocks.append(section(f"owner: {mention}"))
    evidence = _evidence(problem)
    if evidence:
        blocks.append(section(evidence))
    blocks.append(context([f"open since {_when(opened_at)} · last seen {_when(seen_at)} · found by the gpubot watch"]))
    blocks.append(snooze_buttons(problem.fingerprint))
    return Rendered(blocks=blocks, text=L.fallback(title))


#: action id of a snooze button; the choice follows the dash (``watch-snooze-1d``)
SNOOZE_ACTION = "watch-snooze"
_SNOOZE_LABELS = {"1h": "Snooze 1 h", "1d": "Snooze 1 day", "resolved": "Mute until resolved"}
_SNOOZE_CONFIRM = {
    "1h": "No new posts or updates about this problem in this channel for one hour.",
    "1d": "No new posts or updates about this problem in this channel for one day.",
    "resolved": "No updates about this problem in this channel until the watch sees it resolved.",
}


def snooze_buttons(fingerprint: str) -> Block:
    """Snooze 1 h, 1 day, until resolved: each button's value is ``CHOICE:FINGERPRINT``."""
    return {
        "type": "actions",
        "block_id": f"watch-{fingerprint}",
        "elements": [
            {
                "type": "button",
                "action_id": f"{SNOOZE_ACTION}-{choice}",
                "text": {"type": "plain_text", "text": label},
                "value": f"{choice}:{fingerprint}",
                # silencing a live problem can hide the next outage: ask once, in the danger style
                "confirm": {
                    "title": {"type": "plain_text", "text": "Silence this problem?"},
                    "text": {"type": "mrkdwn", "text": _SNOOZE_CONFIRM[choice]},
                    "confirm": {"type": "plain_text", "text": label},
                    "deny": {"type": "plain_text", "text": "Keep watching"},
                    "style": "danger",
                },
            }
            for choice, label in _SNOOZE_LABELS.items()
        ],
    }


def render_snoozed(user: str, until: datetime | None) -> Rendered:
    """The thread reply after a snooze click: who silenced it and until when."""
    span = f"until {_when(until)}" if until is not None else "until it is resolved"
    text = f"🔕 <@{user}> snoozed this problem {span}: no new posts or updates about it until then"
    return Rendered(blocks=[section(text)], text=text)


def render_resolved(problem: Problem, *, opened_at: datetime, resolved_at: datetime) -> Rendered:
    """The same message once the problem is gone: struck through, with how long it lasted."""
    took = lasted(resolved_at - opened_at)
    title = f"✅ resolved: {problem.cluster}: {problem.title}"
    blocks = [
        header(title),
        section(f"~{L.escape_mrkdwn(problem.title)}~  `{problem.code}`"),
        context([f"resolved {_when(resolved_at)} after {took} (open since {_when(opened_at)})"]),
    ]
    return Rendered(blocks=blocks, text=L.fallback(f"resolved after {took}: {problem.title}"))


def render_change(before: Problem, after: Problem) -> Rendered:
    """The thread reply when an open problem changes: what is new and what is gone."""
    lines = []
    if before.title != after.title:
        lines.append(f"now: *{L.escape_mrkdwn(after.title)}* (was: {L.escape_mrkdwn(before.title)})")
    if before.severity != after.severity:
        lines.append(f"severity: {before.severity} → {after.severity}")
    old, new = set(before.evidence), set(after.evidence)
    lines += [f"+ {L.escape_mrkdwn(e)}" for e in after.evidence if e not in old]
    lines += [f"− {L.escape_mrkdwn(e)}" for e in before.evidence if e not in new]
    body = "\n".join(lines) or "the details changed"
    return Rendered(
        blocks=[section(L.clip_lines("changed:\n" + body, L.MAX_SECTION_TEXT))],
        text=L.fallback(f"changed: {after.title}"),
    )


def render_resolved_reply(problem: Problem, *, opened_at: datetime, resolved_at: datetime) -> Rendered:
    """The thread reply that says the problem is gone (the message itself is edited too)."""
    text = f"resolved: no longer seen after {lasted(resolved_at - opened_at)}"
    return Rendered(blocks=[section(text)], text=text)


def render_held(held: list[Problem], *, limit: int) -> Rendered:
    """The channel's one rate-limit summary: which problems wait for their own post."""
    lines = [f"• {severity_marker(p.severity)} {L.escape_mrkdwn(f'{p.cluster}: {p.title}')} `{p.code}`" for p in held]
    text = f"⏸ {len(held)} more GPU problem(s) not posted: this channel takes {limit} new watch posts an hour"
    blocks = [
        section(text),
        section(L.clip_lines("\n".join(lines), L.MAX_SECTION_TEXT)),
        context(["each gets its own message once the hour allows; this summary is edited, not re-posted"]),
    ]
    return Rendered(blocks=blocks, text=L.clip(text, L.MAX_FALLBACK_TEXT))
