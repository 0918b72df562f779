"""gpubot: explains why GPU workloads on Kubernetes do not run, and fixes them only after a confirmation."""
