"""The simulated cluster: a Kubernetes API over HTTP and one SSH server per node.

It is a real peer over real protocols, loaded from scenario files (``scenario-format.md``), and
drives the demo, the tests and the benchmarks. Nothing in ``bot`` outside this package and the
tests imports it, except the CLI's ``--scenario`` option and ``gpubot sim``.
"""
