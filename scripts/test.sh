#!/usr/bin/env bash
# The whole test suite: lint, then pytest. Installs what it needs on first run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/bootstrap.sh
source "$here/bootstrap.sh"
cd "$here/.."
ruff check bot tests bench
# Bytecode: where PYTHONDONTWRITEBYTECODE is set (this project's machines set it), every gpubot
# process a test starts compiled the ~120 modules it imports from source, and every worker
# rewrote the assertions of all ~280 test modules again while collecting (15 s of each worker's
# start). Compile bot/ once, as an install would, and let pytest keep its rewritten modules.
python -m compileall -q bot >/dev/null
export PYTHONDONTWRITEBYTECODE=
# Files are shared out whole among parallel workers (pytest-xdist), one per CPU this process may
# use (nproc; not xdist's `auto`, which counts physical cores where psutil is installed and would
# give one worker on a 2-vCPU runner), or GPUBOT_TEST_WORKERS; `-n 0` in the arguments runs in
# this one process, as pdb and -s need. Many tests wait on subprocesses and simulators, so two
# workers on two cores nearly halve the run, and a module's fixtures are still made once per run.
# The ten slowest tests are listed at the end.
python -m pytest -q -n "${GPUBOT_TEST_WORKERS:-$(nproc 2>/dev/null || echo 2)}" --dist loadfile --durations=10 "$@"
