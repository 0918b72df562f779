"""Which files the gpubot distribution carries; everything else about it is in ``pyproject.toml``.

The one thing ``pyproject.toml`` cannot say: ``runbooks/`` and ``scenarios/`` (at the repository
root, where people edit them) are installed *inside* the package, as ``bot/runbooks/`` and
``bot/scenarios/``. That makes every install (``pip install .``, a wheel, the container image)
carry the built-in runbooks and the bundled scenarios (``gpubot demo``, the README's examples,
``gpubot sim NAME``) from this single source, with no copy kept in git;
``bot.engine.runbook_dir.builtin_runbook_dir`` and ``bot.console.scenario_files.bundled_scenario_dir``
find them there, or at the repository root in a source checkout. ``pyproject.toml`` could map that directory only by
listing every package by hand, which the next new sub-package would silently break.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["bot", "bot.*"]), "bot.runbooks", "bot.scenarios", "bot.scenarios.bases"],
    package_dir={"bot.runbooks": "runbooks", "bot.scenarios": "scenarios", "bot.scenarios.bases": "scenarios/bases"},
    # only top-level *.yaml/*.yml are runbooks (the loader reads nothing else); the README is not.
    # The scenarios (the demo's, the README's, `gpubot sim NAME`) with the bases they include.
    package_data={
        "bot": ["py.typed"],
        "bot.runbooks": ["*.yaml", "*.yml"],
        "bot.scenarios": ["*.yaml"],
        "bot.scenarios.bases": ["*.yaml"],
    },
)
