"""Structured logs (one JSON object per line) and the Prometheus metrics of the running bot.

Log lines carry fields, not prose, so a log pipeline can count outcomes per command and user.
The formatter removes every configured secret value from the final line, whatever logger or
library wrote it (defence in depth: secrets are also wrapped in ``Secret``). This module never
logs request bodies and never holds a secret in a form that could be printed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from typing import IO, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from bot.log_stream import CurrentStderrHandler
from bot.settings import Secret

REDACTED = "[redacted]"
#: shorter "secrets" would redact ordinary words; real Slack tokens are far longer
_MIN_SECRET = 8
_STANDARD_ATTRS = set(vars(logging.LogRecord("x", 0, "x", 0, "x", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, and the record's extra fields."""

    def __init__(self, secrets: Iterable[Secret | str] = ()) -> None:
        super().__init__()
        values = (s.get() if isinstance(s, Secret) else s for s in secrets)
        # longest first, so a secret containing another is removed whole
        self._secrets = sorted({v for v in values if len(v) >= _MIN_SECRET}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for value in self._secrets:
            text = text.replace(value, REDACTED)
        return text

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": self.redact(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exc"] = self.redact(self.formatException(record.exc_info))
        return self.redact(json.dumps(data, default=str, ensure_ascii=False))


def configure_logging(
    level: str = "INFO", *, secrets: Iterable[Secret | str] = (), stream: IO[str] | None = None
) -> logging.Handler:
    """Send every logger's records, as JSON lines, to ``stream`` (stderr); returns the handler.

    It becomes the root logger's only handler: any other (the CLI's plain one, a library's) would
    write each line a second time, and without the redaction.
    """
    handler: logging.Handler = logging.StreamHandler(stream) if stream is not None else CurrentStderrHandler()
    handler.setFormatter(JsonFormatter(secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


def log_event(logger: logging.Logger, event: str, /, *, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with ``fields`` as top-level JSON keys (``extra`` cannot shadow record attrs)."""
    safe = {(k if k not in _STANDARD_ATTRS else f"{k}_"): v for k, v in fields.items()}
    logger.log(level, event, extra=safe)


#: every series the bot exports starts with this
METRIC_PREFIX = "gpubot"


class Metrics:
    """The bot's Prometheus metrics, in their own registry so tests can build many apps.

    Every series is named ``gpubot_…``; the registry also carries the standard process
    (``process_*``: CPU, memory, open files) and platform (``python_info``) collectors. Label
    values come from fixed sets (subcommands, registered action names, Slack method names), never
    from user text, so a user cannot blow up the cardinality.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        reg = self.registry
        ProcessCollector(registry=reg)
        PlatformCollector(registry=reg)
        p = METRIC_PREFIX
        self.commands = Counter(
            f"{p}_commands_total",
            "Slash commands handled, by subcommand and outcome (ok, problem, usage, error).",
            ["subcommand", "outcome"],
            registry=reg,
        )
        self.command_duration = Histogram(
            f"{p}_command_duration_seconds",
            "Time from ack to the posted answer, by subcommand.",
            ["subcommand"],
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60),
            registry=reg,
        )
        self.probe_errors = Counter(
            f"{p}_probe_errors_total",
            "Probes that could not run (reported as skipped), by probe kind.",
            ["probe"],
            registry=reg,
        )
        self.slack_failures = Counter(
            f"{p}_slack_api_failures_total",
            "Slack Web API calls that failed after the client's retries (refused, timed out, "
            "connection lost), by method; each one fell back to a response_url note or a log line.",
            ["method"],
            registry=self.registry,
        )
        self.ack_seconds = Histogram(
            f"{p}_slack_ack_seconds",
            "Time from receiving a Slack request to acknowledging it.",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 3),
            registry=reg,
        )
        self.rejected_signatures = Counter(
            f"{p}_slack_rejected_signatures_total",
            "HTTP-mode requests refused because their Slack signature was missing, malformed or wrong.",
            registry=reg,
        )
        self.duplicates = Counter(
            f"{p}_slack_duplicates_ignored_total",
            "Slack retries and double deliveries recognised and not run again, by kind (command, action).",
            ["kind"],
            registry=reg,
        )
        self.slack_api_errors = Counter(
            f"{p}_slack_api_errors_total",
            "Slack Web API calls that failed (after retries), by method and Slack error.",
            ["method", "error"],
            registry=reg,
        )
        self.slack_rate_limited = Counter(
            f"{p}_slack_rate_limited_total",
            "HTTP 429 answers from the Slack Web API (each is waited out and retried), by method.",
            ["method"],
            registry=reg,
        )
        self.offers = Counter(
            f"{p}_remediation_offers_total",
            "Remediation buttons offered, by action.",
            ["action"],
            registry=reg,
        )
        self.approval_requests = Counter(
            f"{p}_remediation_approval_requests_total",
            "Clicks by someone who may not approve that became a request to the approvers, by action.",
            ["action"],
            registry=reg,
        )
        self.approvals = Counter(
            f"{p}_remediation_approvals_total",
            "Clicks by an approver that ran the action, by action.",
            ["action"],
            registry=reg,
        )
        self.refusals = Counter(
            f"{p}_remediation_refusals_total",
            "Clicks that ran nothing, by action and reason (not_allowed, expired, already_taken, "
            "precondition_failed, denied, unknown).",
            ["action", "reason"],
            registry=reg,
        )
        self.action_outcomes = Counter(
            f"{p}_remediation_action_outcomes_total",
            "Actions that ran, by action and outcome (succeeded, failed).",
            ["action", "outcome"],
            registry=reg,
        )

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition format and its content type, for ``/metrics``."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
