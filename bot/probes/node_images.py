"""A node list's JSON with each node's image list emptied before it is parsed.

Why: a realistic node is ~10 kB of JSON and ~7 kB of it is ``status.images`` (the kubelet
reports up to 50 images, each with its names and size), which no check reads; the watch-fed cache
drops it (``bot.probes.cache``). Parsing it anyway was most of a cold why-pending's node list: at
5,000 nodes orjson took 182-190 ms for the 10 pages whole, 105-108 ms for the pages cut first (the
cut 37 ms of it, two ``bytes.find`` a node).

How: an image list is ``"images":[{...},...,{...}]`` whose entries hold only names (image
references, which cannot contain a brace, a bracket or a quote) and a size, so the first ``}]``
after ``"images":[`` ends it. What is cut must be that: it starts with ``{`` and its braces and
brackets balance (``_balanced``), else the list is left as it is. The cut keeps
``"images":[]``, so the document keeps its shape. Should a server write something else there
anyway, the cut document fails to parse and the reader parses the answer as it came
(``bot.probes.kube``). Nothing here imports gpubot: the benchmark's necessary-reads floor loads this file as
it is (bench/floor_child.py), so the floor reads nodes the way the CLI does.
"""

from __future__ import annotations

_IMAGES = b'"images":['
_ENTRIES_END = b"}]"


def without_images(data: bytes) -> bytes:
    """``data`` with every non-empty ``"images":[...]`` list emptied (``data`` itself when none)."""
    parts: list[bytes] = []
    at = 0
    while (start := data.find(_IMAGES, at)) >= 0:
        body = start + len(_IMAGES)
        end = data.find(_ENTRIES_END, body) if data.startswith(b"{", body) else -1
        if end < 0 or not _balanced(data, body, end + 1):  # empty, or not the shape above: as it is
            at = body
            continue
        parts += (data[at:body], b"]")
        at = end + len(_ENTRIES_END)
    if not parts:
        return data
    parts.append(data[at:])
    return b"".join(parts)


#: every byte but braces and brackets: what ``_balanced`` deletes before it counts
_NOT_NESTING = bytes(c for c in range(256) if c not in b"{}[]")


def _balanced(data: bytes, start: int, end: int) -> bool:
    """``data[start:end]`` opens as many braces and brackets as it closes. Counted in what is left
    once every other byte is deleted (a few dozen bytes of an image list's ~7 kB): four counts
    over the whole list took 9.7 us a node, this 2.9 us (34 ms of a cold read of 5,000 nodes)."""
    nesting = data[start:end].translate(None, _NOT_NESTING)
    return nesting.count(b"{") == nesting.count(b"}") and nesting.count(b"[") == nesting.count(b"]")
