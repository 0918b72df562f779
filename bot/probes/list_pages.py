"""A list page's continue token, read from the first bytes of its JSON before the page is parsed.

Why: a list of many pages (every node of a 5,000-node cluster: ten pages of 5 MB) was read one
page after another, each asked for once the one before it was parsed, so the API server sat idle
while gpubot parsed and gpubot sat idle while the server prepared the next page. The token that
asks for the next page is in the list's ``metadata``, which the API server writes before its
``items`` (its Go types put ``ListMeta`` first): ``{"kind":"NodeList","apiVersion":"v1",
"metadata":{"resourceVersion":"…","continue":"…","remainingItemCount":…},"items":[…]}``. Read
from there, the next page is asked for as soon as this page has arrived (``bot.probes.kube``).

What is read here only decides what to ask for early: the page's parsed ``metadata.continue``
stays the authority, and an answer asked for with a token that turns out not to be it is not
used. An answer laid out otherwise (metadata after the items, spaces, an escaped token) gives no
token, and the pages are read one after another as before. No I/O, nothing of gpubot imported.
"""

from __future__ import annotations

import re

#: how far into an answer its list metadata is looked for (it is a few hundred bytes from the start)
HEAD_BYTES = 4096

#: the answer opens with the list's ``kind`` and ``apiVersion`` (strings) and then its metadata,
#: an object of scalars (resourceVersion, continue, remainingItemCount, selfLink)
_LIST_METADATA = re.compile(rb'\{(?:"(?:kind|apiVersion)":"[^"\\]*",)*"metadata":\{([^{}]*)\}')
#: a continue token as the API server writes it: base64 (URL-safe, unpadded), nothing to unescape
_CONTINUE = re.compile(rb'(?:^|,)"continue":"([A-Za-z0-9_=+/.-]+)"')


def continue_ahead(data: bytes) -> str:
    """The continue token of the list page ``data`` (its first ``HEAD_BYTES``), or "" when it
    has none or it cannot be read there without parsing the page."""
    found = _LIST_METADATA.match(data, 0, HEAD_BYTES)
    if found is None:
        return ""
    token = _CONTINUE.search(found.group(1))
    return token.group(1).decode("ascii") if token is not None else ""
