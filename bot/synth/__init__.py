"""Synthetic clusters for benchmarks and scale tests (``gpubot sim --generate``).

The generators build scenario data (the dict a scenario YAML file holds) and nothing else; they live
outside ``bot.sim`` so the simulator stays what serves a scenario, whoever wrote it. The simulator
never imports this package (tests/unit/test_layers.py); the CLI hands the generated data to it.
"""
