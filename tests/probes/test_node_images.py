"""Node lists are parsed with each node's image list cut first (bot.probes.node_images): the nodes
are the API's in everything but ``status.images`` (left empty), realistic pages included, and an
answer whose image lists are not the expected shape is never cut into a different document."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.probes.node_images import without_images
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario
from bot.synth.command import generated_scenario, write_scenario


def _entries(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(e, dict) for e in value)


def _without_image_lists(document: object) -> object:
    """``document`` with every ``images`` list of entries (objects) emptied, as the cut leaves it."""
    if isinstance(document, dict):
        return {k: [] if k == "images" and _entries(v) else _without_image_lists(v) for k, v in document.items()}
    if isinstance(document, list):
        return [_without_image_lists(v) for v in document]
    return document


def test_a_realistic_node_page_parses_to_the_same_nodes_but_their_image_lists() -> None:
    scenario = generated_scenario("nodes=60,gpu_nodes=20,pods=100,seed=3,realistic=1")
    nodes = [o for o in scenario["kubernetes"]["objects"] if o.get("kind") == "Node"]
    assert len(nodes) == 60 and all(n["status"]["images"] for n in nodes)
    page = orjson.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {"continue": "x"}, "items": nodes})
    cut = without_images(page)
    assert len(cut) < len(page) / 2
    assert orjson.loads(cut) == _without_image_lists(orjson.loads(page))


@pytest.mark.parametrize("page", [
    b'{"items":[{"status":{"images":[]}}]}',  # already empty
    b'{"items":[{"status":{"images":["a"]}},{"spec":{"taints":[{"key":"k"}]}}]}',  # strings, not entries
    b'{"items":[{"status":{"images":[{"names":["a"]},{"names":["b"]'
    b'}]}},{"spec":{"x":{"y":1}}}]}',  # the first "}]" is the list's end: cut, and the rest kept
    b'{"items":[{"status":{"images":[{"names":["a"]}, {"names":["b"}]}}]}',  # unbalanced: left as it is
    b'{"x":"no image list"}',
])
def test_an_answer_is_cut_only_into_the_same_document_less_its_image_entries(page: bytes) -> None:
    cut = without_images(page)
    try:
        original = orjson.loads(page)
    except orjson.JSONDecodeError:
        assert cut == page
        return
    assert orjson.loads(cut) == _without_image_lists(original)


async def test_the_readers_nodes_are_the_clients_but_their_image_lists(tmp_path: Path) -> None:
    """Through the simulator's API server, realistic nodes over two pages."""
    path = tmp_path / "realistic.yaml"
    write_scenario(str(path), generated_scenario("nodes=30,gpu_nodes=10,pods=60,seed=5,realistic=1"))
    async with SimCluster(load_scenario(path), workdir=tmp_path) as sim:
        api = new_api_client(sim.settings().clusters[0])
        reader = KubeReader(api, page_size=20)
        try:
            listed = await reader.list_nodes()
            # the client's own request, in a thread: the simulator answers on this event loop
            answer = await asyncio.to_thread(reader._core.list_node, _preload_content=False)
            raw = orjson.loads(bytes(answer.data))
        finally:
            reader.close()
    whole = [dict(n, kind="Node") for n in raw["items"]]
    assert len(whole) == 30 and all(n["status"]["images"] for n in whole)
    assert listed == _without_image_lists(whole)
