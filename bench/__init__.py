"""gpubot's benchmarks (``./scripts/bench.sh``); every benchmark process is quiet about asyncssh's
import warnings, as gpubot's own commands are (bot/library_warnings.py)."""

from bot.library_warnings import quiet_library_warnings

quiet_library_warnings()
