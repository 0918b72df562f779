"""Fixtures of the Slack tests: a recording mock of Slack on a real port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.slack.mock_slack_api import MockSlackApi


@pytest.fixture
async def mock_slack() -> AsyncIterator[MockSlackApi]:
    mock = await MockSlackApi().start()
    try:
        yield mock
    finally:
        await mock.stop()
