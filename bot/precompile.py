"""``python -m bot.precompile``: what an installer runs after ``compileall``, so that the first
gpubot processes start as fast as the later ones.

It imports every gpubot module once and keeps, beside the bytecode, what each process would
otherwise redo at start-up: the methods ``@dataclass`` generates (bot/dataclass_code.py), the
regular expressions those imports compile (bot/regex_code.py), the validated built-in
runbooks (bot/engine/runbook_cache.py) and the scan of the client calls that ``gpubot doctor``
checks permissions for (bot/doctor/needs.py; both through bot/kept.py). Written even under
``PYTHONDONTWRITEBYTECODE``, as ``compileall`` writes bytecode when asked to. scripts/test.sh, scripts/bench.sh and the
Dockerfile's build stage run it.
"""

from __future__ import annotations

import sys

from bot import dataclass_code, regex_code
from bot.library_warnings import quiet_library_warnings


def main() -> int:
    quiet_library_warnings()  # importing every module imports asyncssh: an installer's log is read too
    patterns = 0

    def import_everything() -> None:
        nonlocal patterns
        patterns = regex_code.record_all(dataclass_code.import_all)

    modules = dataclass_code.compile_all(import_everything)
    # imported only now: a module imported before the recording would compile nothing in it
    from bot.doctor.needs import keep_scan
    from bot.engine.runbook_dir import keep_builtin

    problems = keep_builtin()
    keep_scan()
    print(f"kept: dataclass methods of {modules} modules, {patterns} regular expressions, "
          f"the built-in runbooks ({'with problems' if problems else 'valid'}), the client-call scan")
    for problem in problems:  # stderr: the scripts keep stdout quiet, never these
        print(f"precompile: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
