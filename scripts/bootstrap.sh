#!/usr/bin/env bash
# Create .venv and install gpubot with its dev and png extras, only when something changed.
# Sourced by the other scripts; needs only python3 (>= 3.11) and pip.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  # without pip: ensurepip took 7 of a clean CI run's 18 s of setup, and uv installs everything
  "$py" -m venv --without-pip "$venv"
fi
stamp="$venv/.gpubot-installed"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  echo "installing gpubot and its dependencies into .venv (log: .venv/install.log)" >&2
  # uv (a wheel from PyPI) installs the ~75 packages in seconds where pip took 50-90 s of a CI run
  # on 2 cores; it reads no pip.conf, so it is told to trust the system's certificates as pip
  # does here. pip stays the fallback: a registry uv cannot reach still installs, only slower.
  # uv goes into the venv through the interpreter's own pip (--python: pip >= 22.3)
  if "$py" -m pip --python "$venv/bin/python" install --quiet --disable-pip-version-check "uv>=0.9,<1" \
      >"$venv/install.log" 2>&1 \
    && "$venv/bin/uv" pip install --native-tls --python "$venv/bin/python" -e "${root}[dev,png]" >>"$venv/install.log" 2>&1; then
    :
  else
    echo "uv could not install; installing with pip" >&2
    "$venv/bin/python" -m ensurepip --upgrade >>"$venv/install.log" 2>&1 || true
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check -e "${root}[dev,png]" >>"$venv/install.log" 2>&1; then
      tail -30 "$venv/install.log" >&2
      exit 1
    fi
  fi
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
