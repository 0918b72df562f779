"""What exit status a diagnosis that answered must have, read from its JSON report.

A complete report (nothing skipped) exits 4 (``FINDINGS``) when it holds a critical or warning
finding, else 0. A report that skipped reads may also exit 3 (``INCOMPLETE``: that wiring belongs
to the read-failure work and outranks findings), so only "it answered" is asserted for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.exit_codes import ExitCode


def assert_answered(code: int, report: Mapping[str, Any]) -> None:
    problems = any(f.get("severity") in ("critical", "warning") for f in report.get("findings", []))
    expected = ExitCode.FINDINGS if problems else ExitCode.OK
    if report.get("skipped"):
        assert code in (expected, ExitCode.INCOMPLETE), (code, report.get("skipped"))
    else:
        assert code == expected, (code, [f.get("code") for f in report.get("findings", [])])
