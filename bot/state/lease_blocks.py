"""The blocks of a run's Slack message, packed to ride on its node's action Lease.

A run found only on the Lease (its own state is another process's SQLite file, or a terminal's)
must still have its status line edited by whoever restores it, and that edit needs the message's
blocks. The Lease is the one record every actor shares, but its annotations hold 256 KiB in all,
so the blocks travel compressed (zlib, base64) and only under a budget; over it they are not kept
and the restorer says the outcome in the report's thread instead. Unpacking is bounded too: an
annotation anyone with write access to Leases could have edited must not inflate without limit.
"""

from __future__ import annotations

import base64
import binascii
import zlib

#: packed blocks larger than this are not kept on the Lease (a report message packs to a few KiB)
MAX_PACKED_CHARS = 96 * 1024
#: the most an annotation is unpacked to (a Slack message's blocks are far smaller)
MAX_UNPACKED_BYTES = 1024 * 1024


def pack(blocks_json: str) -> str | None:
    """``blocks_json`` as an annotation value; None when it would not fit the budget."""
    packed = base64.b64encode(zlib.compress(blocks_json.encode("utf-8"), 9)).decode("ascii")
    return packed if len(packed) <= MAX_PACKED_CHARS else None


def unpack(value: str | None) -> str:
    """The blocks JSON an annotation carries; "" when absent, damaged or too large unpacked."""
    if not value:
        return ""
    try:
        inflate = zlib.decompressobj()
        data = inflate.decompress(base64.b64decode(value, validate=True), MAX_UNPACKED_BYTES)
        if inflate.unconsumed_tail or not inflate.eof:
            return ""
        return data.decode("utf-8")
    except (binascii.Error, ValueError, zlib.error, UnicodeDecodeError):
        return ""
