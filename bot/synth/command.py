"""What ``gpubot sim --generate SPEC [--write FILE]`` needs from the generators: the scenario data
for a spec, and that data written as a scenario file. The simulator serves the data; it never
imports this package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.errors import UsageError
from bot.synth.generate import generate_scenario, parse_spec
from bot.yamlio.dump import dump_yaml


def generated_scenario(spec: str) -> dict[str, Any]:
    """The scenario dict for ``spec`` (``nodes=N,gpu_nodes=G,pods=P,seed=S``). A spec the generator
    rejects is the user's input, so it is a one-line usage error, not an internal error."""
    try:
        return generate_scenario(**parse_spec(spec))
    except ValueError as exc:
        raise UsageError(f"--generate: {exc}") from None


def write_scenario(path: str, data: dict[str, Any]) -> None:
    """Write generated data as a scenario YAML file that ``gpubot sim FILE`` serves unchanged."""
    Path(path).write_text(dump_yaml(data), encoding="utf-8")
