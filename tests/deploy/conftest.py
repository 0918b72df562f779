"""Shared by the deploy tests."""

from __future__ import annotations

import os

import pytest

from tests.deploy import render


@pytest.fixture(scope="session", autouse=True)
def helm_renders_shared(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Under pytest-xdist, one helm answer serves every worker of the run: kept in the run's temp
    root (pytest-N, above each worker's popen-gwK), which pytest removes with old runs."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        render.share_renders(tmp_path_factory.getbasetemp().parent / "helm-renders")
