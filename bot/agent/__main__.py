"""``python -m bot.agent READ``: the node agent's own reads (``bot.probes.agent_reads``).

``kernel-log`` (``bot.agent.kernel_log``) and ``nvidia-smi NAME`` (``bot.agent.driver``). Anything
else exits 2 with one line: the bot only ever sends the constants of ``AGENT_READ_COMMANDS``.
``startup`` is the container's own first step (the chart's command): it prints where nvidia-smi
and the kernel log were found, so ``kubectl logs`` of an agent says what that node offers, and
always exits 0 (a node with neither still gets its agent, whose reads then say so).
"""

from __future__ import annotations

import sys


def startup() -> int:
    """One line per source: where nvidia-smi is, which kernel-log source is readable."""
    import io

    from bot.agent.driver import run
    from bot.agent.kernel_log import main as kernel_log

    where, why = io.StringIO(), io.StringIO()
    run("where", where, why)
    print(f"gpubot-node: nvidia-smi: {(where.getvalue() or why.getvalue()).strip()}", flush=True)
    header, reasons = io.StringIO(), io.StringIO()
    kernel_log(header, reasons)
    found = header.getvalue().split("\n", 1)[0].removeprefix("-- gpubot kernel log: ")
    print(f"gpubot-node: kernel log: {found}", flush=True)
    for line in reasons.getvalue().splitlines():
        print(f"gpubot-node: kernel log: {line}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv == ["startup"]:
        return startup()
    if argv == ["kernel-log"]:
        from bot.agent.kernel_log import main as kernel_log

        return kernel_log()
    if len(argv) == 2 and argv[0] == "nvidia-smi":
        from bot.agent.driver import run

        return run(argv[1])
    sys.stderr.write("usage: python -m bot.agent startup | kernel-log | nvidia-smi gpu|apps|summary|ecc|where\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
