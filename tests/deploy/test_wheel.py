"""``pip install gpubot`` is complete: a wheel built from this tree, installed into a fresh venv
and run from outside the checkout, knows its version and runs its demo and the README's example.

The wheel is built from a copy of the files the distribution is made of (never in the checkout:
no build/ or egg-info left behind), with build isolation (setuptools from the index, as
``pyproject.toml`` asks): by uv where scripts/bootstrap.sh put it beside this interpreter (3 s),
else by pip (10-15 s: pip builds its isolated environment afresh each time). The new venv gets
the wheel alone (``--no-deps``); its dependencies
come from the test's own environment through a ``.pth`` line that adds that site-packages *after*
the venv's own, so ``bot`` can only come from the wheel: the test checks where it was imported from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: what the distribution is built from (pyproject.toml, setup.py and what they name)
SOURCES = ("pyproject.toml", "setup.py", "README.md", "bot", "runbooks", "scenarios")


#: the uv that scripts/bootstrap.sh installs into the test environment, if it did
UV = shutil.which("uv", path=str(Path(sys.executable).parent))


def _run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a fresh venv holding only the wheel built from this tree."""
    root = tmp_path_factory.mktemp("wheel")
    src, dist = root / "src", root / "dist"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    if UV:
        build = [UV, "build", "--native-tls", "--wheel", "--quiet", "--out-dir", str(dist), str(src)]
    else:
        build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)]
    built = _run(build, cwd=root)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("gpubot-*.whl")

    target = root / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    if UV:
        pip = [UV, "pip", "install", "--native-tls", "--python", str(python), "--no-deps", "--no-index", "--quiet"]
    else:
        pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q"]
    done = _run([*pip, str(wheel)], cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=root)
    (Path(site.stdout.strip()) / "zz-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return target / "bin"


def _gpubot(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GPUBOT_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return _run([str(bin_dir / "gpubot"), *args], cwd=cwd, env=env)


def test_the_wheel_runs_version_demo_and_the_readme_example(installed: Path, tmp_path: Path) -> None:
    where = _run([str(installed / "python"), "-c", "import bot; print(bot.__file__)"], cwd=tmp_path)
    assert str(installed.parent) in where.stdout, f"bot imported from outside the venv: {where.stdout}{where.stderr}"

    package = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    version = _gpubot(installed, "--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"gpubot {package}\n"), version.stderr

    demo = _gpubot(installed, "demo", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "CHECKPOINT_ZOMBIE" in demo.stdout and "cannot read" not in demo.stdout + demo.stderr

    # the README's first example, typed as written, from a directory with no scenarios/ in it
    example = ["why-pending", "gpu-full-5d8c6-q7wz2", "-n", "ai", "--scenario", "scenarios/zombie-checkpoint.yaml"]
    why = _gpubot(installed, *example, cwd=tmp_path)
    assert why.returncode in (0, 4), why.stderr
    assert "Root cause:" in why.stdout

    help_text = _gpubot(installed, "help", cwd=tmp_path)
    assert help_text.stdout.splitlines()[0].endswith(f"(version {package})"), help_text.stdout[:200]


def test_the_dockerfiles_precompile_step_writes_beside_the_installed_bytecode(installed: Path, tmp_path: Path) -> None:
    """deploy/Dockerfile's build stage runs this after compileall, from its source folder: ``-I``
    keeps that folder off the path, so the files go beside the installed package's bytecode."""
    step = "python -I -m bot.precompile"
    assert step in (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    (tmp_path / "bot").mkdir()  # a source tree in the working directory, as /src is in the build stage
    done = _run([str(installed / "python"), "-I", "-m", "bot.precompile"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    site = next(installed.parent.glob("lib/python*/site-packages"))
    kept = list(site.glob("bot/**/__pycache__/*.dataclasses"))
    assert len(kept) > 100 and not list(tmp_path.rglob("*.dataclasses"))
    # the compiled regular expressions, the validated built-in runbooks and doctor's scan of the
    # client calls (bot/precompile.py)
    assert list(site.glob("bot/__pycache__/regex.*.sre")) and list(site.glob("bot/engine/__pycache__/*.runbooks"))
    assert list(site.glob("bot/doctor/__pycache__/needs.*.scan"))
    assert not list(tmp_path.rglob("__pycache__"))
