#!/usr/bin/env bash
# Create .venv and install gpubot with its dev and png extras, only when something changed.
# Sourced by the other scripts; needs only python3 (>= 3.11) and pip.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
stamp="$venv/.gpubot-installed"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  echo "installing gpubot and its dependencies into .venv (log: .venv/install.log)" >&2
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -e "${root}[dev,png]" >"$venv/install.log" 2>&1; then
    tail -30 "$venv/install.log" >&2
    exit 1
  fi
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
