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
python -m compileall -q -j 0 bot >/dev/null
export PYTHONDONTWRITEBYTECODE=
# and what every process would redo at start-up, kept beside that bytecode: the methods @dataclass
# generates, the compiled regular expressions, the validated runbooks (bot/precompile.py). It
# imports every gpubot module, so the dependencies' bytecode is written here, once, too (uv
# installs none): else the four workers compiled the same ~560 modules side by side.
python -m bot.precompile >/dev/null
# Two passes. First every test but the `exclusive` ones, their files shared out whole among
# parallel workers (pytest-xdist), the slowest files first (tests/slow_files.yaml): two per CPU
# this process may use (nproc; not xdist's `auto`, which counts physical cores where psutil is
# installed), or GPUBOT_TEST_WORKERS. Most tests wait on subprocesses, simulators and sockets more
# than they compute, so two workers a core keep the CPUs busy; a module's fixtures are still made
# once. Then the `exclusive` tests (a wall-clock deadline is what they check) with no ordinary
# test beside them: interleaved, each one stopped every worker until the longest running test
# ended. They wait on deadlines far more than they compute (under half a core each, measured), so
# two workers run their two files at once. `-n 0` in the arguments runs both passes in this one
# process, as pdb and -s need. The ten slowest tests are listed.
workers="${GPUBOT_TEST_WORKERS:-$(( 2 * $(nproc 2>/dev/null || echo 1) ))}"
status=0
python -m pytest -q -n "$workers" --dist loadfile --no-loadscope-reorder --durations=10 -m "not exclusive" "$@" || status=$?
if [ "$#" -eq 0 ]; then
  # only the files that have such tests: collecting the whole suite again costs more than they run
  mapfile -t exclusive < <(grep -rl --include='test_*.py' 'pytest.mark.exclusive' tests | sort)
  set -- "${exclusive[@]}"
fi
python -m pytest -q -n 2 --dist loadfile --durations=5 -m exclusive "$@" || { rc=$?; [ "$rc" -eq 5 ] || status=$rc; }
exit "$status"
