"""The DRA selector subset gpubot evaluates, and that it refuses to guess at the rest."""

from __future__ import annotations

import pytest

from bot.kube.dra_cel import Unsupported, check, matches
from bot.kube.dra_devices import select

DRIVER = "gpu.nvidia.com"
A100 = {
    "name": "gpu-0",
    "attributes": {"productName": {"string": "NVIDIA A100-SXM4-80GB"}, "type": {"string": "gpu"},
                   "driverVersion": {"version": "550.90.7"}, "index": {"int": 0},
                   "example.com/zone": {"string": "a"}},
    "capacity": {"memory": {"value": "80Gi"}},
}


@pytest.mark.parametrize(("expression", "expected"), [
    ('device.driver == "gpu.nvidia.com"', True),
    ("device.driver == 'other.example.com'", False),
    ('device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"', True),
    ('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"', False),
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("96Gi")) >= 0', False),
    ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("79Gi"))', True),
    ('device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0"))', True),
    ('device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100") && '
     '!(device.attributes["gpu.nvidia.com"].index > 3)', True),
    ('device.attributes["example.com"].zone == "a"', True),
    ('"productName" in device.attributes["gpu.nvidia.com"]', True),
    # a missing attribute is a runtime error: no match, unless the other side of || decides
    ('device.attributes["gpu.nvidia.com"].mig == "1g.10gb"', False),
    ('device.attributes["gpu.nvidia.com"].mig == "1g.10gb" || device.attributes["gpu.nvidia.com"].type == "gpu"',
     True),
])
def test_selectors_are_evaluated(expression: str, expected: bool) -> None:
    assert matches(expression, A100, DRIVER) is expected


@pytest.mark.parametrize("expression", [
    'device.attributes["gpu.nvidia.com"].productName.size() > 3',
    'device.attributes.exists(d, d == "gpu.nvidia.com")',
    "cel.bind(x, 1, x == 1)",
    "device.driver ==",
])
def test_what_is_not_evaluated_is_refused_not_guessed(expression: str) -> None:
    with pytest.raises(Unsupported):
        matches(expression, A100, DRIVER)
    assert check(expression)


def test_a_comparison_of_different_types_is_refused() -> None:
    with pytest.raises(Unsupported):
        matches('device.attributes["gpu.nvidia.com"].productName == 3', A100, DRIVER)


def test_select_says_which_selector_it_could_not_evaluate() -> None:
    slices = [{"spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1"}, "devices": [A100]}}]
    ok = select(slices, {DRIVER}, ['device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'])
    assert ok.count == 1 and not ok.unevaluated
    bad = select(slices, {DRIVER}, ['device.attributes["gpu.nvidia.com"].productName.size() > 3'])
    assert [e for e, _ in bad.unevaluated] == ['device.attributes["gpu.nvidia.com"].productName.size() > 3']
