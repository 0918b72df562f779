"""Render the Kustomize targets with the real ``kubectl kustomize``, the way users apply them.

Helpers only; never writes into the repository (a combined target is built in a temp dir).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
KUSTOMIZE = REPO / "deploy" / "kustomize"
BASE = KUSTOMIZE / "base"
OVERLAYS = KUSTOMIZE / "overlays"
COMPONENTS = KUSTOMIZE / "components"
RUNBOOKS = REPO / "runbooks"

Obj = dict[str, Any]


def kubectl() -> str:
    path = shutil.which("kubectl")
    if not path:
        raise AssertionError("kubectl is not on PATH; the deploy tests render with `kubectl kustomize`")
    return path


def overlay_dirs() -> list[Path]:
    """Every overlay users can apply directly."""
    return sorted(p for p in OVERLAYS.iterdir() if (p / "kustomization.yaml").is_file())


def component_dirs() -> list[Path]:
    return sorted(p for p in COMPONENTS.iterdir() if (p / "kustomization.yaml").is_file())


def target_names() -> list[str]:
    """base, each overlay, and ``all-components`` (every component at once: they must compose)."""
    return ["base", *(f"overlays/{p.name}" for p in overlay_dirs()), "all-components"]


@functools.cache
def render_text(name: str) -> str:
    """The YAML stream ``kubectl kustomize`` prints for the target ``name``."""
    if name == "all-components":
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "kustomization.yaml").write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "kustomize.config.k8s.io/v1beta1",
                        "kind": "Kustomization",
                        # kustomize refuses absolute paths here
                        "resources": [os.path.relpath(BASE, tmp)],
                        "components": [os.path.relpath(p, tmp) for p in component_dirs()],
                    }
                )
            )
            return _kustomize(Path(tmp))
    return _kustomize(KUSTOMIZE / name)


def _kustomize(path: Path) -> str:
    proc = subprocess.run(
        [kubectl(), "kustomize", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path} failed:\n{proc.stderr}")
    return proc.stdout


def render_dir(path: Path) -> list[Obj]:
    """The rendered objects of any kustomization directory (a user's own, built in a test)."""
    return [d for d in yaml.safe_load_all(_kustomize(path)) if d]


def render(name: str) -> list[Obj]:
    """The rendered objects of target ``name`` (fresh dicts: callers may not share mutations)."""
    return [d for d in yaml.safe_load_all(render_text(name)) if d]


def find(objs: list[Obj], kind: str, name_prefix: str = "") -> list[Obj]:
    return [o for o in objs if o["kind"] == kind and o["metadata"]["name"].startswith(name_prefix)]


def one(objs: list[Obj], kind: str, name_prefix: str = "") -> Obj:
    found = find(objs, kind, name_prefix)
    assert len(found) == 1, f"expected one {kind} {name_prefix!r}, found {len(found)}"
    return found[0]
