"""Slack's message limits and the small helpers that keep text inside them.

Slack rejects a whole message (``invalid_blocks``) when one field is one character too long, so
every string that reaches Block Kit passes through here first. This module only measures and cuts
text; it never decides what a message says.
"""

from __future__ import annotations

#: blocks in one message
MAX_BLOCKS = 50
#: characters in a section's text (and any other mrkdwn text object)
MAX_SECTION_TEXT = 3000
#: characters in a header block's plain text
MAX_HEADER = 150
#: characters in a button's text
MAX_BUTTON_TEXT = 75
#: characters in a button's value
MAX_BUTTON_VALUE = 2000
#: characters in an action_id or block_id
MAX_ID = 255
#: elements in one actions block
MAX_ACTIONS_ELEMENTS = 25
#: elements in one context block
MAX_CONTEXT_ELEMENTS = 10
#: confirmation dialog: title, text, confirm and deny button labels
MAX_CONFIRM_TITLE = 100
MAX_CONFIRM_TEXT = 300
MAX_CONFIRM_BUTTON = 30
#: the message's plain ``text`` fallback (notifications, screen readers); Slack cuts at 40,000
MAX_FALLBACK_TEXT = 3000
#: our own cap on all the text of one message: beyond this a report is unreadable in a channel and
#: goes to an attached file instead (Slack's hard limit is far higher)
MAX_MESSAGE_TEXT = 12000

ELLIPSIS = "…"
CODE_FENCE = "```"


def clip(text: str, limit: int, *, marker: str = ELLIPSIS) -> str:
    """``text`` cut to ``limit`` characters, ending with ``marker`` when it was cut."""
    if len(text) <= limit:
        return text
    if limit <= len(marker):
        return text[:limit]
    return text[: limit - len(marker)] + marker


#: how a message says that the rest of a cut text is in the thread under it
MORE_IN_THREAD = "… (more in the thread)"


def clip_lines(text: str, limit: int, *, marker: str = "\n… (cut)") -> str:
    """Cut at a line boundary where one is close, else at a sentence or word boundary, so a
    half line or half word never dangles."""
    if len(text) <= limit:
        return text
    room = max(limit - len(marker), 0)
    head = text[:room]
    newline = head.rfind("\n")
    head = head[:newline] if newline >= room // 2 else _at_boundary(text, room)
    return (head + marker)[:limit]


def clip_prose(text: str, limit: int, *, marker: str = " " + MORE_IN_THREAD) -> str:
    """``text`` cut to ``limit`` at the end of a sentence where one is close, else between words,
    then ``marker``: a reader sees where it stops, never a word cut in two."""
    if len(text) <= limit:
        return text
    if limit <= len(marker):
        return clip(text, limit)
    return _at_boundary(text, limit - len(marker)) + marker


def _at_boundary(text: str, room: int) -> str:
    """The longest head of ``text`` within ``room`` that ends a sentence (when that keeps at least
    half), else ends a word (when that keeps a third), else the hard cut."""
    head = text[:room]
    sentence = max(head.rfind(". "), head.rfind(".\n"), head.rfind("; "))
    if sentence >= room // 2:
        return head[: sentence + 1]
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= room // 3 and not text[room : room + 1].isspace():
        return head[:space].rstrip()
    return head.rstrip()


def escape_mrkdwn(text: str) -> str:
    """Escape the three characters Slack treats as control characters in mrkdwn.

    This also neutralises ``<!channel>``-style mentions and ``<url|label>`` links hidden in
    cluster data (event messages, labels), which a report quotes verbatim.
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fallback(text: str) -> str:
    """A message's notification ``text`` when it is built from cluster or alert data.

    Slack parses the top-level ``text`` as mrkdwn too (it is what the push notification shows),
    so it is escaped like any block: a label ``<!channel>`` must never ping from there either.
    """
    return clip_prose(escape_mrkdwn(text), MAX_FALLBACK_TEXT)


def code_block(text: str, limit: int = MAX_SECTION_TEXT, *, prefix: str = "") -> str:
    """``prefix`` followed by ``text`` in a code fence, cut so the fence always closes."""
    body = escape_mrkdwn(text.replace(CODE_FENCE, "`\u200b``"))
    overhead = len(prefix) + 2 * len(CODE_FENCE) + 2
    body = clip_lines(body, max(limit - overhead, 1), marker="\n… (more lines in the full report)")
    # escaping may have cut an entity in half; drop a dangling "&am" fragment
    amp = body.rfind("&", max(len(body) - 5, 0))
    if amp != -1 and ";" not in body[amp:]:
        body = body[:amp] + ELLIPSIS
    return f"{prefix}{CODE_FENCE}\n{body}\n{CODE_FENCE}"


def split_chunks(lines: list[str], limit: int) -> list[str]:
    """Pack lines into chunks of at most ``limit`` characters (over-long lines are clipped)."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for raw in lines:
        line = clip(raw, limit)
        extra = len(line) + (1 if current else 0)
        if current and size + extra > limit:
            chunks.append("\n".join(current))
            current, size = [], 0
            extra = len(line)
        current.append(line)
        size += extra
    if current:
        chunks.append("\n".join(current))
    return chunks
