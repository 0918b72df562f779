"""Which files the gpubot distribution carries; everything else about it is in ``pyproject.toml``.

The one thing ``pyproject.toml`` cannot say: ``runbooks/`` (at the repository root, where people
edit it) is installed *inside* the package, as ``bot/runbooks/``. That makes every install
(``pip install .``, a wheel, the container image) carry the built-in runbooks from this single
source, with no copy kept in git; ``bot.engine.runbook_dir.builtin_runbook_dir`` finds them there,
or at ``runbooks/`` in a source checkout. ``pyproject.toml`` could map that directory only by
listing every package by hand, which the next new sub-package would silently break.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["bot", "bot.*"]), "bot.runbooks"],
    package_dir={"bot.runbooks": "runbooks"},
    # only top-level *.yaml/*.yml are runbooks (the loader reads nothing else); the README is not
    package_data={"bot": ["py.typed"], "bot.runbooks": ["*.yaml", "*.yml"]},
)
