"""One source for runbooks: the package (and so the image) carries ``runbooks/``.

The tests build the package's files with setuptools' own ``build_py`` (offline, about a second).
"""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import setuptools

from bot.engine.runbook_dir import runbook_files
from bot.engine.runbooks import load_runbooks
from tests.deploy.render import REPO, RUNBOOKS

DOCKERFILE = REPO / "deploy" / "Dockerfile"
DEPLOY_README = REPO / "deploy" / "README.md"


# ---------------------------------------------------------------------------------------------
# the package and the image carry the runbooks


def _setup_kwargs(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What setup.py hands to setuptools (it computes packages relative to the repository)."""
    captured: dict[str, Any] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    monkeypatch.chdir(REPO)
    runpy.run_path(str(REPO / "setup.py"), run_name="__main__")
    assert captured, "setup.py did not call setuptools.setup"
    return captured


def test_built_package_carries_the_runbooks_and_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """setuptools' build_py (what a wheel and the image's `pip install .` contain) puts runbooks/
    inside the package, and an installed package loads them as its built-in set."""
    dist = setuptools.Distribution({"name": "gpubot", "script_name": "setup.py", **_setup_kwargs(monkeypatch)})
    build = dist.get_command_obj("build_py")
    build.build_lib = str(tmp_path)  # type: ignore[attr-defined]
    build.compile = 0  # type: ignore[attr-defined]
    build.ensure_finalized()
    build.run()
    monkeypatch.undo()
    built = tmp_path / "bot" / "runbooks"
    expected = {p.name: p.read_bytes() for p in runbook_files(RUNBOOKS)}
    assert expected and {p.name: p.read_bytes() for p in built.iterdir()} == expected
    modules = {str(p.relative_to(REPO)) for p in (REPO / "bot").rglob("*.py")}
    assert modules <= {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.py")}
    assert (tmp_path / "bot" / "py.typed").is_file()
    # an installed package has no runbooks/ next to it: only the packaged copy can be found
    script = (
        "import json, bot; from bot.engine.runbook_dir import builtin_runbook_dir, check_dir;"
        "rs, problems = check_dir(None, None);"
        "print(json.dumps([bot.__file__, str(builtin_runbook_dir()), problems, sorted(rs.diagnoses)]))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    module, found, problems, commands = json.loads(proc.stdout.splitlines()[-1])
    assert Path(module).is_relative_to(tmp_path) and Path(found) == built
    assert problems == [] and commands == sorted(load_runbooks(None).diagnoses)


def test_image_installs_the_runbooks_with_the_package() -> None:
    """The build stage hands runbooks/ and setup.py to `pip install .`; the final stage adds no copy."""
    build, final = re.split(r"(?m)^FROM ", DOCKERFILE.read_text(encoding="utf-8"))[1:][-2:]
    copies = re.findall(r"(?m)^COPY (?!--from)(.+) (\S+)$", build)
    sources = {src.rstrip("/") for line, _ in copies for src in line.split()}
    assert {"pyproject.toml", "setup.py", "bot", "runbooks"} <= sources
    install = build.index("pip install --no-compile .")
    assert all(build.index(f"COPY {line} {dest}") < install for line, dest in copies)
    final = re.sub(r"(?m)^#.*$", "", final)  # comments may explain; instructions must not copy
    assert "runbooks" not in final, "the image's runbooks come inside the package"
    assert "GPUBOT_RUNBOOK_DIR" not in final, "unset in the image: no overrides unless a deployment mounts some"
