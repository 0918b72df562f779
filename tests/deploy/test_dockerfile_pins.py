"""The image's base is pinned by digest, in every stage alike, and the bump script moves the pin.

A tag alone (``python:3.11-slim-bookworm``) is re-pushed every few weeks: two builds of one commit
could get different bases. The digest fixes the bytes; the tag stays for readers and for the
bump script, which needs to know what to resolve.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
BUMP = REPO / "scripts" / "bump_base_image.sh"
#: FROM [--platform=…] IMAGE [AS NAME]
_FROM = re.compile(r"(?im)^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$")
_PINNED = re.compile(r"^(?P<image>[^@\s:]+):(?P<tag>[^@\s]+)@(?P<digest>sha256:[0-9a-f]{64})$")


def _from_lines(text: str) -> list[tuple[str, str]]:
    """(image reference, stage name) of every FROM line."""
    return [(m.group(1), m.group(2) or "") for m in _FROM.finditer(text)]


def _external_bases(text: str) -> list[str]:
    """The FROM references that pull an image (not ones that build on an earlier stage)."""
    stages: set[str] = set()
    out = []
    for ref, name in _from_lines(text):
        if ref not in stages:
            out.append(ref)
        if name:
            stages.add(name)
    return out


def _bump(dockerfile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the bump script on ``dockerfile`` with no network tools on PATH beyond the basics."""
    env = {"PATH": "/usr/bin:/bin", "DOCKERFILE": str(dockerfile)}
    return subprocess.run(["bash", str(BUMP), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_every_base_is_pinned_by_tag_and_digest() -> None:
    bases = _external_bases(DOCKERFILE.read_text(encoding="utf-8"))
    assert len(bases) >= 2, "a build stage and a runtime stage"
    for ref in bases:
        match = _PINNED.match(ref)
        assert match, f"FROM {ref}: pin it as IMAGE:TAG@sha256:… (scripts/bump_base_image.sh)"


def test_the_stages_and_the_base_label_agree() -> None:
    """The venv built in one stage runs on the other: they must be the same image, and the OCI
    label that names the base must say which."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    pins = set(_external_bases(text))
    assert len(pins) == 1, f"the stages use different bases: {sorted(pins)}"
    match = _PINNED.match(pins.pop())
    assert match
    label = re.search(r'org\.opencontainers\.image\.base\.digest="([^"]+)"', text)
    assert label and label.group(1) == match.group("digest")
    name = re.search(r'org\.opencontainers\.image\.base\.name="([^"]+)"', text)
    assert name and name.group(1).endswith(f"{match.group('image')}:{match.group('tag')}")


def test_the_pattern_rejects_a_tag_alone_and_a_digest_alone() -> None:
    """The check above can fail: what an unpinned or tagless FROM looks like."""
    text = "FROM python:3.11-slim AS build\nFROM python@sha256:" + "a" * 64 + "\nFROM build\n"
    assert _external_bases(text) == ["python:3.11-slim", "python@sha256:" + "a" * 64]
    assert not any(_PINNED.match(ref) for ref in _external_bases(text))


def test_bump_script_rewrites_every_pin_to_a_given_digest(tmp_path: Path) -> None:
    copy = tmp_path / "Dockerfile"
    shutil.copy(DOCKERFILE, copy)
    before = copy.read_text(encoding="utf-8")
    old = _PINNED.match(_external_bases(before)[0])
    assert old
    new = "sha256:" + "0123456789abcdef" * 4
    proc = _bump(copy, new)
    assert proc.returncode == 0, proc.stderr
    after = copy.read_text(encoding="utf-8")
    assert old.group("digest") not in after
    assert after.count(new) == before.count(old.group("digest")) >= 3  # two FROMs and the label
    assert all(_PINNED.match(ref) for ref in _external_bases(after))
    assert after.replace(new, old.group("digest")) == before, "nothing but the digest changed"
    again = _bump(copy, new)
    assert again.returncode == 0 and "current digest" in again.stdout


def test_bump_script_refuses_what_is_not_a_digest(tmp_path: Path) -> None:
    copy = tmp_path / "Dockerfile"
    shutil.copy(DOCKERFILE, copy)
    for bad in ("sha256:xyz", "sha256:" + "A" * 64):
        proc = _bump(copy, bad)
        assert proc.returncode == 2 and "not a sha256 digest" in proc.stderr
    assert copy.read_text(encoding="utf-8") == DOCKERFILE.read_text(encoding="utf-8")
    unpinned = tmp_path / "Unpinned"
    unpinned.write_text("FROM python:3.11-slim\n", encoding="utf-8")
    proc = _bump(unpinned, "sha256:" + "0" * 64)
    assert proc.returncode == 2 and "no FROM line pinned by digest" in proc.stderr
