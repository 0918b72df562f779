"""Which reads a cold diagnosis makes for the pods on its candidate nodes (``KubeReader.slim_pods``).

A field-selected list per node costs us about as much as decoding five realistic pods, so the
reader lists node by node until the nodes hold most of the cluster's pods: a cluster whose GPU
nodes are a fifth of its nodes (200 nodes / 40 GPU nodes, the benchmark's small size) must not
decode every pod of the cluster to find theirs. The answer is the same either way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest
from kubernetes import config

from bot.errors import KubeApiError
from bot.probes import lazy_pods
from bot.probes.deadline import until
from bot.probes.kube import PER_NODE_CONCURRENCY, KubeReader
from bot.probes.slim import SlimPod
from bot.sim.kube_api import KubeApiServer
from bot.sim.kubeconfig import write_kubeconfig
from bot.sim.scenario import ApiFault, scenario_from_dict
from bot.sim.threaded import LoopThread
from bot.synth.generate import generate_scenario


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    loop = LoopThread("slim-pods-sim")
    api = KubeApiServer(scenario_from_dict(generate_scenario(nodes=40, gpu_nodes=8, pods=400, seed=5)))
    loop.call(api.start())
    yield api
    loop.call(api.stop())
    loop.close()


@pytest.fixture
async def reader(tmp_path: Path, server: KubeApiServer) -> AsyncIterator[KubeReader]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    r = KubeReader(config.new_client_from_config(config_file=str(kubeconfig)))
    yield r
    r.close()


def _names(pods: Sequence[SlimPod]) -> list[tuple[str, str, str]]:
    return sorted((p.namespace, p.name, p.node) for p in pods)


async def test_a_fifth_of_the_nodes_is_read_node_by_node(reader: KubeReader) -> None:
    nodes = await reader.list_nodes()
    gpu = {n["metadata"]["name"] for n in nodes if n["metadata"]["name"].startswith("gpu-")}
    assert len(gpu) == 8 and len(nodes) == 40
    before = reader.stats.requests
    picked = await reader.slim_pods(nodes=gpu, all_nodes=len(nodes))
    assert reader.stats.requests - before == len(gpu)  # one field-selected list per node, no walk
    everything = await reader.slim_pods()
    assert _names(picked) == _names([p for p in everything if p.node in gpu]) and picked


# -- the per-node lists' reading threads (``KubeReader._per_node_lists``) -------------------------
# Each thread reads its nodes one after another, retries included, outside the event loop: what
# the loop did for every request (retries, the command's deadline, stopping at the first
# failure) must hold there too.


async def _node_names(reader: KubeReader) -> list[str]:
    return sorted(n["metadata"]["name"] for n in await reader.list_nodes())


async def test_a_transient_failure_of_one_nodes_list_is_retried_in_its_thread(
    reader: KubeReader, server: KubeApiServer
) -> None:
    nodes = await _node_names(reader)
    wanted = set(nodes[:12])
    expected = _names(await reader.slim_pods(nodes=wanted, all_nodes=100))
    server.faults.add(ApiFault(match=f"spec.nodeName%3D{nodes[3]}", verb="GET", status=429, times=1))
    before, served = reader.stats.requests, server.stats.requests
    assert _names(await reader.slim_pods(nodes=wanted, all_nodes=100)) == expected
    assert reader.stats.requests - before == len(wanted)  # every list answered once ...
    assert server.stats.requests - served == len(wanted) + 1  # ... one of them on its second try


async def test_the_first_failed_node_stops_the_other_threads(reader: KubeReader, server: KubeApiServer) -> None:
    nodes = await _node_names(reader)
    server.faults.add(ApiFault(match=f"spec.nodeName%3D{nodes[0]}", verb="GET", status=403))
    before = reader.stats.requests
    with pytest.raises(KubeApiError) as caught:
        await reader.slim_pods(nodes=set(nodes), all_nodes=100)
    assert caught.value.kind == "forbidden" and nodes[0] in caught.value.user_message
    # the other threads finish the node they hold and take no other (none reads on, unseen, after
    # the command has its answer): far fewer than the 40 lists, however long one waits
    await asyncio.sleep(0.5)
    assert reader.stats.requests - before < len(nodes) - PER_NODE_CONCURRENCY


async def test_the_commands_deadline_bounds_the_reading_threads(reader: KubeReader, server: KubeApiServer) -> None:
    nodes = await _node_names(reader)
    server.faults.add(ApiFault(match=f"spec.nodeName%3D{nodes[5]}", verb="GET", hang=True))
    started = time.monotonic()
    with until(started + 0.5), pytest.raises(KubeApiError) as caught:
        await reader.slim_pods(nodes=set(nodes), all_nodes=100)
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 2.0  # the deadline, not the reader's 10 s timeout per try


async def test_a_cancelled_command_stops_the_reading_threads(reader: KubeReader, server: KubeApiServer) -> None:
    nodes = await _node_names(reader)
    server.faults.add(ApiFault(match="spec.nodeName", verb="GET", delay_s=0.05))
    served = server.stats.requests
    task = asyncio.create_task(reader.slim_pods(nodes=set(nodes), all_nodes=100))
    await asyncio.sleep(0.08)  # the first round of lists in flight
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.5)  # time for all 40 at 8 a time, had the threads gone on
    assert server.stats.requests - served < len(nodes) - PER_NODE_CONCURRENCY


# -- the walk over every pod (``slim_pods`` where the nodes hold most pods) ----------------------
# Its pages are parsed lazily (``bot.probes.lazy_pods``): only the wanted nodes' pods, and only the
# fields their records read, are built. The records must be those of pages decoded whole.


async def test_the_lazily_parsed_walk_keeps_what_a_whole_decoded_walk_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = LoopThread("slim-walk-sim")
    realistic = generate_scenario(nodes=12, gpu_nodes=10, pods=300, seed=3, realistic=1)
    api = KubeApiServer(scenario_from_dict(realistic))
    loop.call(api.start())
    reader = KubeReader(config.new_client_from_config(config_file=str(write_kubeconfig(tmp_path / "kc", api.url))))
    try:
        nodes = await _node_names(reader)
        wanted = set(nodes[:10])
        built: list[object] = []
        real = lazy_pods.skeleton
        monkeypatch.setattr(lazy_pods, "skeleton", lambda pod: built.append(pod) or real(pod))
        before = reader.stats.requests
        lazy = await reader.slim_pods(nodes=wanted, all_nodes=len(nodes))  # 10 of 12: the walk
        assert reader.stats.requests - before == 1, "one page of every pod, not a list per node"
        monkeypatch.setattr(lazy_pods, "simdjson", None)  # pages decoded whole, as without simdjson
        whole = await reader.slim_pods(nodes=wanted, all_nodes=len(nodes))
    finally:
        reader.close()
        loop.call(api.stop())
        loop.close()
    assert len(built) == len(lazy), "each kept pod was built from its lazily parsed page, no other"
    assert sorted(lazy, key=lambda p: p.uid) == sorted(whole, key=lambda p: p.uid)
    assert {p.node for p in lazy} <= wanted and len(lazy) > 100
    assert any(p.gpu for p in lazy) and any(p.ready for p in lazy) and any(p.owner for p in lazy)


def test_a_page_that_does_not_parse_lazily_is_left_to_the_whole_decode() -> None:
    def keep(item: object) -> object:
        return item

    assert lazy_pods.kept_items(b"not json", keep) is None
    assert lazy_pods.kept_items(b"[1, 2]", keep) is None  # a document, but not a list object
    kept = lazy_pods.kept_items(b'{"metadata": {"continue": "t2"}, "items": [{"a": 1}]}', lambda i: i.as_dict())
    assert kept == ([{"a": 1}], "t2")
