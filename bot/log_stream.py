"""A log handler bound to the current ``sys.stderr``, not the one logging was configured with.

Its own module, importing only ``logging`` and ``sys``: the CLI uses it for every command, and a
command must not pay for the metrics library ``bot.observability`` imports.
"""

from __future__ import annotations

import logging
import sys
from typing import Any


class CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is emitted. Logging is configured once
    per process: an in-process caller (a test capturing output) that swaps ``sys.stderr`` would
    otherwise leave the first stream behind, closed, and a later record would print "--- Logging
    error ---" with a traceback into someone else's output."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        """Always the current ``sys.stderr``: nothing to keep."""
