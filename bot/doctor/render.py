"""The doctor's answer as a terminal reads it: one line per check, its fix beneath a failure."""

from __future__ import annotations

from bot.doctor.result import DoctorReport

_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "unknown": "??  ", "skip": "-   "}


def render_doctor(report: DoctorReport) -> str:
    lines = [f"gpubot doctor: {report.subject}", ""]
    for check in report.checks:
        lines.append(f"  {_MARK[check.status]}  {check.name}: {check.text}")
        if check.fix and check.status in ("fail", "unknown", "warn"):
            lines.append(f"        fix: {check.fix}")
    broken, unread = len(report.broken), len(report.unread)
    verdict = "everything checked works" if not (broken or unread) else ", ".join(
        part for part in (f"{broken} broken" if broken else "", f"{unread} could not be checked" if unread else "")
        if part
    )
    lines += ["", f"{len(report.checks)} checks in {report.elapsed_s:.1f}s: {verdict}"]
    return "\n".join(lines) + "\n"
