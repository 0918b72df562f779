"""``python -m bot.agent READ``: the node agent's own reads (``bot.probes.agent_reads``).

``kernel-log`` (``bot.agent.kernel_log``) and ``nvidia-smi NAME`` (``bot.agent.driver``). Anything
else exits 2 with one line: the bot only ever sends the constants of ``AGENT_READ_COMMANDS``.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv == ["kernel-log"]:
        from bot.agent.kernel_log import main as kernel_log

        return kernel_log()
    if len(argv) == 2 and argv[0] == "nvidia-smi":
        from bot.agent.driver import run

        return run(argv[1])
    sys.stderr.write("usage: python -m bot.agent kernel-log | nvidia-smi gpu|apps|summary|ecc|where\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
