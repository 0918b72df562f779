"""Fixtures of the proactive tests: the recording mock of Slack, as the Slack tests have it."""

from tests.slack.conftest import mock_slack

__all__ = ["mock_slack"]
