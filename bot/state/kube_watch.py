"""The watch's memory on the Kubernetes API (``state: kubernetes``): ``ProblemStore`` and ``AlertGroups``
on ``GpuWatchRecord`` objects, so a new leader knows every problem the old one posted.

Without it, a replica taking over the watch would find its own empty SQLite file and post every
open problem a second time. One object per open problem and channel, named by the hash of both:
"at most one open post per problem and channel" is the API server's AlreadyExists, not only this
code's. Resolving copies the row to a history object and deletes the open one (at the version
read); a snooze and a channel's rate-limit summary are one object each. Resolved history older
than ``retention`` and snoozes past their time are deleted by ``sweep`` (the leader runs it).
Times are the watcher's, as with the SQLite store; only the leader's watcher writes here.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.errors import NotFoundError
from bot.state.kube import API_VERSION, WATCH_RECORDS, Conflict, KubeState, hashed_name
from bot.state.records import POSTING, OpenProblem, Problem
from bot.state.timestamps import format_ts, parse_ts

_TYPE = "gpubot.dev/watch-type"
_CHANNEL = "gpubot.dev/channel"
_FINGERPRINT = "gpubot.dev/fingerprint"
_STATE = "gpubot.dev/watch-state"
DEFAULT_RETENTION = timedelta(days=30)


def _label(text: str) -> str:
    """A label value for any text: the hash (fingerprints and channel ids are not all label-safe)."""
    return hashed_name("h", text, 40)


def _open_problem(obj: Mapping[str, Any]) -> OpenProblem:
    spec = obj["spec"]
    resolved = spec.get("resolvedAt")
    return OpenProblem(
        problem=Problem(
            fingerprint=spec["fingerprint"],
            cluster=spec["cluster"],
            code=spec["code"],
            severity=spec["severity"],
            subject=spec["subject"],
            title=spec["title"],
            evidence=tuple(spec.get("evidence") or ()),
        ),
        channel=spec["channel"],
        message_ts=spec["messageTs"],
        opened_at=parse_ts(spec["openedAt"]),
        updated_at=parse_ts(spec["updatedAt"]),
        digest=spec["digest"],
        resolved_at=parse_ts(resolved) if resolved else None,
    )


class KubeProblemStore:
    """Open and resolved watch problems, snoozes and summaries as ``GpuWatchRecord`` objects."""

    def __init__(self, state: KubeState, *, retention: timedelta = DEFAULT_RETENTION) -> None:
        self.state = state
        self.retention = retention

    # -- objects -------------------------------------------------------------------------------
    def _body(self, name: str, kind: str, labels: Mapping[str, str], spec: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": "GpuWatchRecord",
            "metadata": {
                "name": name,
                "labels": {"app.kubernetes.io/managed-by": "gpubot", _TYPE: kind, **labels},
            },
            "spec": {"type": kind, **spec},
        }

    def _get(self, name: str) -> dict[str, Any] | None:
        try:
            return self.state.get(WATCH_RECORDS, name)
        except NotFoundError:
            return None

    def _put(self, body: dict[str, Any]) -> None:
        """Create or replace ``body`` (last writer wins: only the leader's watcher writes)."""
        for _ in range(5):
            current = self._get(body["metadata"]["name"])
            try:
                if current is None:
                    self.state.create(WATCH_RECORDS, body)
                else:
                    meta = {**body["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
                    self.state.replace(WATCH_RECORDS, {**body, "metadata": meta})
                return
            except (Conflict, NotFoundError):
                continue

    def _list(self, kind: str, **labels: str) -> list[dict[str, Any]]:
        selector = ",".join([f"{_TYPE}={kind}", *(f"{k}={v}" for k, v in labels.items())])
        return self.state.list_all(WATCH_RECORDS, label_selector=selector)

    @staticmethod
    def _open_name(fingerprint: str, channel: str) -> str:
        return hashed_name("p", f"{fingerprint}\n{channel}")

    # -- problems ------------------------------------------------------------------------------
    def open_problems(self, cluster: str, channel: str) -> dict[str, OpenProblem]:
        """Fingerprint -> the open problem posted to ``channel`` for ``cluster``."""
        rows = [_open_problem(o) for o in self._list("problem", **{_CHANNEL: _label(channel), _STATE: "open"})]
        return {r.problem.fingerprint: r for r in rows if r.problem.cluster == cluster and r.channel == channel}

    def history(self, fingerprint: str) -> list[OpenProblem]:
        rows = [_open_problem(o) for o in self._list("problem", **{_FINGERPRINT: _label(fingerprint)})]
        return sorted((r for r in rows if r.problem.fingerprint == fingerprint), key=lambda r: r.opened_at)

    def opened(self, problem: Problem, *, channel: str, message_ts: str, at: datetime) -> None:
        spec = {
            "fingerprint": problem.fingerprint,
            "channel": channel,
            "cluster": problem.cluster,
            "code": problem.code,
            "subject": problem.subject,
            "severity": problem.severity,
            "title": problem.title,
            "evidence": list(problem.evidence),
            "digest": problem.digest,
            "messageTs": message_ts,
            "openedAt": format_ts(at),
            "updatedAt": format_ts(at),
            "state": "open",
        }
        labels = {_CHANNEL: _label(channel), _FINGERPRINT: _label(problem.fingerprint), _STATE: "open"}
        body = self._body(self._open_name(problem.fingerprint, channel), "problem", labels, spec)
        # a second open post of one problem in one channel is refused by the API server itself
        self.state.create(WATCH_RECORDS, body)

    def intend(self, problem: Problem, *, channel: str, at: datetime) -> None:
        """Record the open problem before its message is posted (the ts follows in ``posted``)."""
        self.opened(problem, channel=channel, message_ts=POSTING, at=at)

    def posted(self, fingerprint: str, *, channel: str, message_ts: str) -> None:
        """The message an intent was posted as."""
        self._edit_open(fingerprint, channel, {"messageTs": message_ts})

    def changed(self, problem: Problem, *, channel: str, at: datetime) -> None:
        self._edit_open(
            problem.fingerprint,
            channel,
            {
                "severity": problem.severity,
                "title": problem.title,
                "evidence": list(problem.evidence),
                "digest": problem.digest,
                "updatedAt": format_ts(at),
            },
        )

    def _edit_open(self, fingerprint: str, channel: str, changes: Mapping[str, Any]) -> None:
        for _ in range(5):
            current = self._get(self._open_name(fingerprint, channel))
            if current is None:
                return
            try:
                self.state.replace(WATCH_RECORDS, {**current, "spec": {**current["spec"], **changes}})
                return
            except (Conflict, NotFoundError):
                continue

    def resolved(self, fingerprint: str, *, channel: str, at: datetime) -> None:
        current = self._get(self._open_name(fingerprint, channel))
        if current is None:
            return
        spec = {**current["spec"], "state": "resolved", "resolvedAt": format_ts(at), "updatedAt": format_ts(at)}
        labels = {**current["metadata"]["labels"], _STATE: "resolved"}
        name = f"r-{at.astimezone(UTC):%Y%m%d%H%M%S}-{secrets.token_hex(6)}"
        self.state.create(WATCH_RECORDS, {**current, "metadata": {"name": name, "labels": labels}, "spec": spec})
        self.state.delete(WATCH_RECORDS, current["metadata"]["name"], current["metadata"]["resourceVersion"])

    def posts_since(self, channel: str, since: datetime) -> int:
        rows = [_open_problem(o) for o in self._list("problem", **{_CHANNEL: _label(channel)})]
        return sum(1 for r in rows if r.channel == channel and r.opened_at > since)

    # -- snoozes -------------------------------------------------------------------------------
    def snooze(self, fingerprint: str, *, channel: str, until: datetime | None, by: str, at: datetime) -> None:
        spec = {
            "fingerprint": fingerprint,
            "channel": channel,
            "until": format_ts(until) if until is not None else None,
            "snoozedBy": by,
            "snoozedAt": format_ts(at),
        }
        labels = {_CHANNEL: _label(channel), _FINGERPRINT: _label(fingerprint)}
        self._put(self._body(hashed_name("s", f"{fingerprint}\n{channel}"), "snooze", labels, spec))

    def snoozed(self, fingerprint: str, *, channel: str, now: datetime) -> bool:
        found = self._get(hashed_name("s", f"{fingerprint}\n{channel}"))
        if found is None:
            return False
        until = found["spec"].get("until")
        return until is None or parse_ts(until) > now

    def end_snoozes_until_resolved(self, fingerprint: str, *, channel: str) -> None:
        found = self._get(hashed_name("s", f"{fingerprint}\n{channel}"))
        if found is not None and found["spec"].get("until") is None:
            self.state.delete(WATCH_RECORDS, found["metadata"]["name"], found["metadata"]["resourceVersion"])

    # -- the rate-limit summary ----------------------------------------------------------------
    def summary(self, channel: str) -> tuple[str, datetime, str] | None:
        found = self._get(hashed_name("m", channel))
        if found is None:
            return None
        spec = found["spec"]
        return str(spec["messageTs"]), parse_ts(spec["windowStart"]), str(spec["digest"])

    def summarised(self, channel: str, *, message_ts: str, window_start: datetime, digest: str) -> None:
        spec = {"channel": channel, "messageTs": message_ts, "windowStart": format_ts(window_start), "digest": digest}
        self._put(self._body(hashed_name("m", channel), "summary", {_CHANNEL: _label(channel)}, spec))

    # -- Alertmanager groups ---------------------------------------------------------------------
    def known(self, group_key: str, channel: str) -> tuple[str, str] | None:
        """The message an alert group was posted as in ``channel``, and the digest it shows."""
        found = self._get(hashed_name("a", f"{group_key}\n{channel}"))
        if found is None:
            return None
        return str(found["spec"]["messageTs"]), str(found["spec"]["digest"])

    def remember(self, group_key: str, channel: str, message_ts: str, digest: str) -> None:
        spec = {
            "groupKey": group_key,
            "channel": channel,
            "messageTs": message_ts,
            "digest": digest,
            "updatedAt": format_ts(self.state.now()),
        }
        self._put(self._body(hashed_name("a", f"{group_key}\n{channel}"), "alert", {_CHANNEL: _label(channel)}, spec))

    # -- housekeeping --------------------------------------------------------------------------
    def sweep(self, now: datetime) -> int:
        """Delete resolved history and alert groups untouched for ``retention``, and snoozes past
        their time."""
        gone = 0
        for obj in self._list("alert"):
            updated = obj["spec"].get("updatedAt")
            if updated and parse_ts(updated) + self.retention < now:
                with contextlib.suppress(Conflict, NotFoundError):
                    self.state.delete(WATCH_RECORDS, obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
                    gone += 1
        for obj in self._list("problem", **{_STATE: "resolved"}):
            resolved = obj["spec"].get("resolvedAt")
            if resolved and parse_ts(resolved) + self.retention < now:
                self.state.delete(WATCH_RECORDS, obj["metadata"]["name"])
                gone += 1
        for obj in self._list("snooze"):
            until = obj["spec"].get("until")
            if until and parse_ts(until) <= now:
                with contextlib.suppress(Conflict):
                    self.state.delete(WATCH_RECORDS, obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
                    gone += 1
        return gone
