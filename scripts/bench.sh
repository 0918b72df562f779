#!/usr/bin/env bash
# The benchmark suite (issues 8, 14): why-pending cold/warm/kubectl, node-status fan-out, Slack ack,
# Slack ack while a 20,000-event why-pending runs.
# Installs what it needs on first run, like scripts/test.sh; writes bench/results/LATEST.md.
# Needs kubectl on PATH for the hand-procedure comparison. Pass --quick for a short smoke run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/bootstrap.sh
source "$here/bootstrap.sh"
cd "$here/.."
command -v kubectl >/dev/null || { echo "bench: kubectl is needed on PATH" >&2; exit 2; }
# An installed gpubot has bytecode (pip compiles what it installs); this editable checkout only
# has it if something wrote it, and with PYTHONDONTWRITEBYTECODE set nothing does: every cold CLI
# run would compile bot/ from source. Compile it once, as an install would.
python -m compileall -q bot bench >/dev/null
# and what every process would redo at start-up, kept beside that bytecode: the methods @dataclass
# generates, the compiled regular expressions, the validated runbooks (bot/precompile.py)
python -m bot.precompile >/dev/null
python -m bench.run_all "$@"
