"""Logs: one handler, JSON lines, every line redacted (also what the CLI's plain handler would print)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from bot.observability import REDACTED, configure_logging


@pytest.fixture
def clean_root() -> Iterator[None]:
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    yield
    root.handlers[:] = saved
    root.setLevel(level)


def test_serve_logging_replaces_the_plain_handler_so_each_line_is_written_once(clean_root: None) -> None:
    secret = "xoxb-1234567890-abcdefghij"
    plain = io.StringIO()
    logging.basicConfig(level=logging.DEBUG, stream=plain, force=True)  # what the CLI installs first
    out = io.StringIO()
    configure_logging("INFO", secrets=[secret], stream=out)
    logging.getLogger("bot.test").warning("token is %s", secret)
    assert len(logging.getLogger().handlers) == 1
    assert plain.getvalue() == ""
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["msg"] == f"token is {REDACTED}"
    assert secret not in out.getvalue()
