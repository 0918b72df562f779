"""gpubot: explains why GPU workloads on Kubernetes do not run, and fixes them only after a confirmation."""

from bot.kube_import import install as _install_lazy_kubernetes

# before any gpubot module imports the official client: import its pieces as they are used
_install_lazy_kubernetes()
