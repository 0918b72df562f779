"""A list of several pages: each page is asked for as soon as the one before it has arrived, while
that one is parsed (``bot.probes.kube._PagesAhead``), and the walk answers exactly what a walk of
one page after another answers: the same objects, the same failures, and no answer asked for with
a token that was not the page's own."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import bot.probes.kube as kube
from bot.errors import KubeApiError
from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.probes.list_pages import continue_ahead
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "topology-spread-zone-gpu.yaml"


def _reader(sim: SimCluster) -> KubeReader:
    return KubeReader(new_api_client(sim.settings().clusters[0]), page_size=1)  # a page a node


async def _names(reader: KubeReader) -> list[str]:
    return [n["metadata"]["name"] for n in await reader.list_nodes()]


async def test_the_next_page_is_asked_for_while_this_one_is_parsed(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        reader = _reader(sim)
        asked_meanwhile: list[bool] = []
        first = threading.Lock()

        def keep(node: dict[str, Any]) -> str:
            # in the reading thread, while the first page is parsed: the server must see the
            # request for the second page before this parse is done (never, one page after another)
            if first.acquire(blocking=False):
                before = sim.api.stats.requests
                limit = time.monotonic() + 10
                while sim.api.stats.requests == before and time.monotonic() < limit:
                    time.sleep(0.01)
                asked_meanwhile.append(sim.api.stats.requests > before)
            return str(node["metadata"]["name"])

        try:
            read = kube._listing("nodes", "", {})
            kept = await reader._walk(read, keep, reader._core.list_node, _path="/api/v1/nodes")
            expected = await _names(reader)
        finally:
            reader.close()
    assert asked_meanwhile == [True]
    assert kept == expected and len(expected) >= 3


async def test_an_answer_asked_for_with_a_token_read_wrong_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        plain = _reader(sim)
        try:
            expected = await _names(plain)
        finally:
            plain.close()
        monkeypatch.setattr(kube, "continue_ahead", lambda data: "not-the-token")
        misread = _reader(sim)
        before = sim.api.stats.requests
        try:
            got = await _names(misread)
        finally:
            misread._pool.shutdown(wait=True)  # the answer asked ahead is in, whenever it came
            misread.close()
        asked = sim.api.stats.requests - before
    assert got == expected and len(expected) >= 3
    # one page a node, and at most the one answer asked for with the wrong token (not used, and
    # cancelled if no reading thread had sent it yet); nothing more was asked ahead after it
    assert len(expected) <= asked <= len(expected) + 1


async def test_a_page_asked_ahead_is_retried_and_refused_as_any_page(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        reader = _reader(sim)
        try:
            expected = await _names(reader)
            sim.api.faults.add(ApiFault(match="continue=", status=500, times=1))  # one page fails once
            assert await _names(reader) == expected
            sim.api.faults.add(ApiFault(match="continue=", status=403))  # every later page refused
            with pytest.raises(KubeApiError) as refused:
                await _names(reader)
        finally:
            reader.close()
    assert refused.value.status == 403 and refused.value.kind == "forbidden"


async def test_a_walk_given_up_asks_for_no_more_pages(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        reader = _reader(sim)
        try:
            sim.api.faults.add(ApiFault(match="continue=", delay_s=0.3))  # every page after the first
            walk = asyncio.ensure_future(_names(reader))
            await asyncio.sleep(0.15)  # the first page is in, the second asked for and on its way
            walk.cancel()
            with pytest.raises(asyncio.CancelledError):
                await walk
            await asyncio.sleep(1.0)  # a walk that went on would have asked for three more by now
        finally:
            reader.close()
    later_pages = [path for _, path, _, _ in sim.api.faults.fired if "continue=" in path]
    assert len(later_pages) <= 1


API_HEAD = (
    b'{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"7227","continue":'
    b'"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NzIyN30","remainingItemCount":500},"items":[{"metadata":{}}]}'
)


@pytest.mark.parametrize(
    ("data", "token"),
    [
        (API_HEAD, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NzIyN30"),
        (b'{"kind":"PodList","apiVersion":"v1","metadata":{"continue":"abc_-="},"items":[]}', "abc_-="),
        (b'{"metadata":{"resourceVersion":"1","continue":"x"},"items":[]}', "x"),
        # the last page: no token, or an empty one
        (b'{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"7227"},"items":[]}', ""),
        (b'{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":""},"items":[]}', ""),
        # laid out otherwise: nothing is guessed, the page is parsed first
        (b'{"items":[{"metadata":{"continue":"x"}}],"metadata":{"continue":"y"}}', ""),
        (b'{ "kind": "NodeList", "metadata": {"continue": "y"}, "items": []}', ""),
        (b'{"kind":"NodeList","metadata":{"continue":"a\\u003db"},"items":[]}', ""),
        (b'{"kind":"NodeList","metadata":{"remainingContinue":"x"},"items":[]}', ""),
        (b"", ""),
        (b"not json", ""),
    ],
)
def test_the_token_is_read_from_the_head_only_where_the_server_wrote_it_plainly(data: bytes, token: str) -> None:
    assert continue_ahead(data) == token


def test_the_token_is_looked_for_in_the_head_of_the_answer_only() -> None:
    padded = b'{"kind":"NodeList","apiVersion":"' + b"v" * 5000 + b'","metadata":{"continue":"x"},"items":[]}'
    assert continue_ahead(padded) == ""
