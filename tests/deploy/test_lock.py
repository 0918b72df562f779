"""The image installs exactly the locked dependencies, each verified by hash, at versions past
the known CVEs the floors in pyproject.toml exclude."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "deploy" / "requirements.lock"


def _locked() -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of every pinned requirement."""
    text = LOCK.read_text(encoding="utf-8")
    out = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = re.match(r"([A-Za-z0-9_.\-]+)==([^\s\\]+)", block)
        if match:
            out[match.group(1).lower().replace("_", "-")] = (match.group(2), block.count("--hash=sha256:"))
    return out


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def test_every_runtime_dependency_is_locked_with_hashes_at_or_above_its_floor() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    locked = _locked()
    assert locked and all(n >= 1 for _, n in locked.values()), "every pin carries a hash"
    for requirement in project["dependencies"]:
        name, _, floor = re.split(r"(>=)", requirement.split(";")[0].strip(), maxsplit=1)
        key = name.strip().lower().replace("_", "-")
        assert key in locked, f"{key} is not in deploy/requirements.lock (run scripts/lock.sh)"
        assert _version(locked[key][0]) >= _version(floor), f"{key} {locked[key][0]} is below {floor}"


def test_the_png_extra_is_locked_too() -> None:
    """The image draws the node-status picture: the png extra is part of the lock."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    locked = _locked()
    for requirement in extras["png"]:
        name, _, floor = re.split(r"(>=)", requirement, maxsplit=1)
        assert name.strip().lower() in locked, f"{name} is not in deploy/requirements.lock (run scripts/lock.sh)"
        assert _version(locked[name.strip().lower()][0]) >= _version(floor)


def test_known_vulnerable_releases_are_excluded_by_the_floors() -> None:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    floors = {re.split(r">=", d)[0].strip(): _version(re.split(r">=", d)[1]) for d in deps if ">=" in d}
    assert floors["asyncssh"] >= (2, 14, 2)  # Terrapin, CVE-2023-48795
    assert floors["aiohttp"] >= (3, 10, 11)


def test_the_image_installs_the_lock_with_require_hashes_before_the_package() -> None:
    text = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    lock_at = text.index("--require-hashes --no-deps -r requirements.lock")
    package_at = text.index("pip install --no-compile --no-deps .")
    assert lock_at < package_at


def test_the_image_ships_bytecode_compiled_after_the_install() -> None:
    """A read-only root cannot cache bytecode at run time: the build stage compiles it, after the
    package install and the clean-up (which would delete it), with hash-based pycs."""
    build = re.split(r"(?m)^FROM ", (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8"))[1]
    compile_at = build.index("-m compileall")
    assert build.index("pip install --no-compile --no-deps .") < compile_at
    assert build.index("-name '__pycache__'") < compile_at
    assert "--invalidation-mode unchecked-hash /opt/gpubot/lib" in build[compile_at:]
