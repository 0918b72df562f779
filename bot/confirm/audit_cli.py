"""``gpubot audit``: print the audit trail from the state file, as a table or JSON lines.

Reads only: it opens the SQLite file named by ``settings.state_path`` (creating the schema if the
file is new, so a fresh install prints "no audit entries" rather than an error). It must never
append to the trail or change a pending action.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bot.confirm.audit import format_audit, parse_since
from bot.confirm.sqlite_store import open_state
from bot.errors import UsageError
from bot.settings import Settings


def print_audit(settings: Settings, *, since: str, as_json: bool, limit: int) -> int:
    """Print the newest ``limit`` entries at or after ``since`` (oldest first); exit code 0."""
    if limit < 1:
        raise UsageError("--limit: must be at least 1")
    start = parse_since(since, datetime.now(UTC)) if since else None
    _store, audit = open_state(settings.state_path)
    text = format_audit(audit.query(start, limit), as_json)
    if text:
        print(text)
    return 0
