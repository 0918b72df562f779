"""Secrets planted in a live cluster never reach the capture file (checked on its bytes).

The corpus (``tests/data/planted_secrets.yaml``) plants each secret shape in its own place of a
real scenario: command words, shell strings, probes, env, labels, annotations (plain, JSON, YAML,
embedded objects), event messages and node kernel logs. ``gpubot capture --anonymize`` then reads
the simulator over each node transport, and not one planted secret may survive, while the
non-secret look-alikes (ports, paths, ``--tokenizer``) must.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.capture.redact import REDACTED
from bot.sim.scenario import Scenario, load_scenario, scenario_from_dict
from bot.sim.scenario_include import read_yaml, resolve_base
from tests import yaml_data
from tests.capture.conftest import SCENARIOS, LiveSim, cli

CORPUS = Path(__file__).resolve().parents[1] / "data" / "planted_secrets.yaml"
SLACK = "xoxb-2222222222-3333333333-PlantedSlackTokenValue1"
AWS = "AKIAPLANTEDKEY123456"
PASSWORD = "correct-horse-battery-staple"
APP = "xapp-1-A0PLANTED-5555555555-deadbeefcafe"


def _corpus() -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = yaml_data.load_file(CORPUS)
    return data


def _strings(entry: dict[str, Any], key: str) -> list[str]:
    value = entry[key]
    return [value] if isinstance(value, str) else list(value)


def _plant(entries: list[dict[str, Any]]) -> Scenario:
    """zombie-checkpoint.yaml (with its base's cluster) with every entry planted in its place."""
    path = SCENARIOS / "zombie-checkpoint.yaml"
    data = resolve_base(path, read_yaml(path))
    objects = data["kubernetes"]["objects"]
    pod = next(o for o in objects if o["kind"] == "Pod")
    event = next(o for o in objects if o["kind"] == "Event")
    meta = pod["metadata"]
    spec = pod["spec"]
    for n, entry in enumerate(entries):
        words = entry.get("args")
        if "shell" in entry:
            words = ["sh", "-c", entry["shell"]]
        if words is not None or "probe" in entry:
            init: dict[str, Any] = {"name": f"plant-{n}", "image": "busybox:1.36", "args": words or ["true"]}
            if "probe" in entry:
                init["livenessProbe"] = {"exec": {"command": entry["probe"]}}
            spec.setdefault("initContainers", []).append(init)
        if "env" in entry:
            spec["containers"][0].setdefault("env", []).append(entry["env"])
        for where in ("label", "annotation"):
            if where in entry:
                meta.setdefault(f"{where}s", {})[entry[where]["key"]] = entry[where]["value"]
        if "event" in entry:
            planted = copy.deepcopy(event)
            planted["metadata"]["name"] = f"{event['metadata']['name']}{n:02d}"
            planted["metadata"]["uid"] = f"0000c351-7a1e-4c2b-9d3f-0000000{n:05d}"
            planted.update(reason="Planted", message=entry["event"])
            objects.append(planted)
        if "kernel" in entry:
            for section in data["nodes"].values():
                section.setdefault("kernel_log", []).append({"time": "2026-05-08T06:00:00Z", "text": entry["kernel"]})
    return scenario_from_dict(data, source="planted")


def _all_text(value: Any) -> Iterator[str]:
    """Every string of a parsed document (a secret folded across YAML lines is still found)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _all_text(v)
    elif isinstance(value, list):
        for v in value:
            yield from _all_text(v)
    elif value is not None:
        yield str(value)


def test_the_corpus_is_large_and_every_secret_is_distinct() -> None:
    corpus = _corpus()
    secrets = [s for e in corpus["secrets"] for s in _strings(e, "secret")]
    assert len(corpus["secrets"]) >= 40
    assert len(set(secrets)) == len(secrets)
    assert len({e["id"] for e in corpus["secrets"] + corpus["keep"]}) == len(corpus["secrets"] + corpus["keep"])


@pytest.mark.parametrize("access", ["agent", "ssh"])
def test_no_planted_secret_survives_an_anonymized_capture(
    access: str, live_sim: Callable[[object], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus()
    live = live_sim(_plant(corpus["secrets"] + corpus["keep"]))  # type: ignore[arg-type]
    out = tmp_path / "capture.yaml"
    argv = ["--config", str(live.config), "capture", "-o", str(out), "--node-access", access, "--anonymize"]
    code, stdout, err = cli(argv, capsys)
    assert code == 0, err
    data = out.read_text(encoding="utf-8")
    text = "\n".join(_all_text(yaml_data.load(data)))
    survivors = [
        f"{e['id']}: {s}"
        for e in corpus["secrets"]
        for s in _strings(e, "secret")
        if s in data or s in text or s in stdout + err
    ]
    assert survivors == []
    lost = [f"{e['id']}: {k}" for e in corpus["keep"] for k in _strings(e, "keep") if k not in text]
    assert lost == []
    # the planted kernel lines were read over the transport (so their redaction was tested)
    assert "NVRM: debug dump user=ops password=<redacted>" in text


@pytest.mark.parametrize("access", ["agent", "ssh"])
def test_planted_tokens_are_not_in_the_capture(
    access: str, live_sim: Callable[[object], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The original four: env values, ``--flag=token``, ``--password X``, a label and notes."""
    path = SCENARIOS / "zombie-checkpoint.yaml"
    data = resolve_base(path, read_yaml(path))
    pods = [o for o in data["kubernetes"]["objects"] if o["kind"] == "Pod"]
    namespaces = [o for o in data["kubernetes"]["objects"] if o["kind"] == "Namespace"]
    container = pods[0]["spec"]["containers"][0]
    container["env"] = [
        *container.get("env", []),
        {"name": "SLACK_BOT_TOKEN", "value": SLACK},
        {"name": "AWS_ACCESS_KEY_ID", "value": AWS},
        {"name": "DB_PASSWORD", "value": PASSWORD},
    ]
    container["args"] = [*container.get("args", []), f"--app-token={APP}", "--password", PASSWORD]
    pods[0]["metadata"].setdefault("annotations", {})["example.com/deploy-token"] = SLACK
    pods[0]["metadata"].setdefault("labels", {})["leaked-key"] = AWS
    namespaces[0]["metadata"].setdefault("annotations", {})["example.com/notes"] = f"ci uses {AWS}"
    live = live_sim(scenario_from_dict(data, source="planted"))  # type: ignore[arg-type]
    out = tmp_path / "capture.yaml"
    code, stdout, err = cli(["--config", str(live.config), "capture", "-o", str(out), "--node-access", access], capsys)
    assert code == 0, err
    raw = out.read_bytes()
    for secret in (SLACK, AWS, PASSWORD, APP):
        assert secret.encode() not in raw, f"{secret[:6]}… leaked into the capture"
        assert secret not in stdout + err
    assert REDACTED.encode() in raw
    assert "env values" in err  # the summary says what was removed, by count
    # still a scenario the simulator loads, with the pod that carried them
    names = {o["metadata"]["name"] for o in load_scenario(out).objects if o["kind"] == "Pod"}
    assert names
