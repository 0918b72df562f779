"""``gpubot pending`` / ``/gpu pending``: every GPU pod of a namespace (or the cluster) that does
not run, grouped by root cause, worst first.

The causes come from the why-pending engine itself (``bot.engine.runner``), run once per distinct
workload and bounded: the cluster-wide reads (nodes, GPU components, the pods on GPU nodes) are
gathered once and handed to every diagnosis, and the per-pod reads go through one memo
(``bot.pending.reads``) that lists each namespace's events once. Modules: ``scan`` finds and groups
the stuck pods, ``run`` drives the diagnoses, ``model`` is the answer, ``render`` prints it.
"""
