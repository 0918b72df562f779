"""gpubot: explains why GPU workloads on Kubernetes do not run, and fixes them only after a confirmation."""

from bot.regex_code import install as _install_regex_code

# first: the patterns every later import compiles come from their kept code (bot/regex_code.py)
_install_regex_code()

from bot.dataclass_code import install as _install_dataclass_code  # noqa: E402
from bot.kube_import import install as _install_lazy_kubernetes  # noqa: E402

# before any gpubot module defines a dataclass: their generated methods compiled once, not per process
_install_dataclass_code()
# before any gpubot module imports the official client: import its pieces as they are used
_install_lazy_kubernetes()
