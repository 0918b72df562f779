"""What exit status a diagnosis that answered must have, read from its JSON report.

An incomplete report (``"complete": false``: reads it rested on failed) exits 3 (``INCOMPLETE``),
which outranks findings; a complete one exits 4 (``FINDINGS``) when it holds a critical or
warning finding, else 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.exit_codes import ExitCode


def expected_status(report: Mapping[str, Any]) -> ExitCode:
    if report.get("complete") is False:
        return ExitCode.INCOMPLETE
    problems = any(f.get("severity") in ("critical", "warning") for f in report.get("findings", []))
    return ExitCode.FINDINGS if problems else ExitCode.OK


def assert_answered(code: int, report: Mapping[str, Any]) -> None:
    assert code == expected_status(report), (code, [f.get("code") for f in report.get("findings", [])],
                                             report.get("unreadable"))
