#!/usr/bin/env bash
# The whole test suite: lint, then pytest. Installs what it needs on first run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/bootstrap.sh
source "$here/bootstrap.sh"
cd "$here/.."
ruff check bot tests bench
python -m pytest -q "$@"
