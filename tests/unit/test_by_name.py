"""``bot.probes.views.by_name``: the node map's direct indexing answers as ``name_of`` does."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.objects import name_of
from bot.probes.views import by_name

CASES: list[list[Any]] = [
    [],
    [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
    [{"metadata": {"name": "a"}}, {"metadata": {}}],  # a node without a name
    [{"metadata": {"name": "a"}}, {"metadata": None}],
    [{"metadata": {"name": "a"}}, {}],
    [{"metadata": {"name": 7}}],  # not a string
    [{"metadata": {"name": None}}, {"metadata": {"name": ""}}],
    [{"metadata": {"name": "a"}, "n": 1}, {"metadata": {"name": "a"}, "n": 2}],  # the last one wins
]


@pytest.mark.parametrize("objects", CASES)
def test_by_name_is_name_of(objects: list[Any]) -> None:
    assert by_name(objects) == {name_of(o): o for o in objects}
    for name, obj in by_name(objects).items():
        assert type(name) is str and obj is {name_of(o): o for o in objects}[name]
