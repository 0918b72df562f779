"""gpubot: explains why GPU workloads on Kubernetes do not run, and fixes them only after a confirmation."""

from bot.dataclass_code import install as _install_dataclass_code
from bot.kube_import import install as _install_lazy_kubernetes

# before any gpubot module defines a dataclass: their generated methods compiled once, not per process
_install_dataclass_code()
# before any gpubot module imports the official client: import its pieces as they are used
_install_lazy_kubernetes()
