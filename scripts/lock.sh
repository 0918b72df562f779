#!/usr/bin/env bash
# Regenerate deploy/requirements.lock: every runtime dependency (and the png extra, so the image
# draws the node-status picture) pinned with its hashes, for the image's `pip install
# --require-hashes`. Run after changing dependencies in pyproject.toml.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${XDG_CACHE_HOME:-$HOME/.cache}/gpubot-pip-tools"
[ -x "$tools/bin/pip-compile" ] || { python3 -m venv "$tools" && "$tools/bin/pip" install --quiet pip-tools; }
cd "$root"
"$tools/bin/pip-compile" --quiet --generate-hashes --strip-extras --allow-unsafe --extra png \
  --no-emit-index-url --no-emit-find-links -o deploy/requirements.lock pyproject.toml
echo "deploy/requirements.lock updated"
