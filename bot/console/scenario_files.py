"""Where a ``--scenario`` argument (and ``gpubot sim SCENARIO``) finds its file.

The bundled scenarios live at ``scenarios/`` in the repository, where people edit them, and are
installed inside the package as ``bot/scenarios/`` (setup.py maps the one directory, as it does
the runbooks), so ``pip install gpubot`` carries the demo's, the README's and ``gpubot sim``'s
clusters with no copy kept in git. An argument names a file as given when it exists; otherwise a
bundled scenario by name: ``zombie-checkpoint``, ``zombie-checkpoint.yaml`` or the README's
``scenarios/zombie-checkpoint.yaml`` all work from any directory. Path handling only: importing
this module costs nothing.
"""

from __future__ import annotations

from pathlib import Path

from bot.errors import UsageError
from bot.names import printable

#: the folder prefix the README and the demo write before a bundled scenario's name
_PREFIX = "scenarios/"


def bundled_scenario_dir() -> Path:
    """The scenarios shipped with gpubot: ``bot/scenarios/`` in an installed package, else the
    ``scenarios/`` directory next to the ``bot`` package (a source checkout or an editable install)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "scenarios"
    return installed if installed.is_dir() else package.parent / "scenarios"


def bundled_scenarios() -> list[str]:
    """The bundled scenarios' names (file names without ``.yaml``), sorted."""
    return sorted(p.stem for p in bundled_scenario_dir().glob("*.yaml"))


def resolve_scenario(given: str) -> str:
    """The path of the scenario ``given`` names: the file itself, else the bundled one of that name.

    Raises UsageError naming the argument and how to list the bundled ones."""
    if Path(given).is_file():
        return given
    name = given.removeprefix(_PREFIX).removesuffix(".yaml")
    bundled = bundled_scenario_dir() / f"{name}.yaml"
    if "/" not in name and bundled.is_file():
        return str(bundled)
    example = next(iter(bundled_scenarios()), "")
    raise UsageError(
        f"scenario file not found: {printable(given)} (nor a bundled scenario of that name; "
        f"the bundled ones are in {bundled_scenario_dir()}, e.g. --scenario {example})"
    )
