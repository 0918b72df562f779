"""The blocks a run's node Lease carries for its status line: packed small, unpacked bounded."""

from __future__ import annotations

import base64
import json
import os
import zlib

from bot.state.lease_blocks import MAX_PACKED_CHARS, MAX_UNPACKED_BYTES, pack, unpack


def test_blocks_round_trip_and_pack_small() -> None:
    blocks = json.dumps([{"type": "section", "text": {"type": "mrkdwn", "text": "line " * 2000}}])
    packed = pack(blocks)
    assert packed is not None and len(packed) < len(blocks) / 10
    assert unpack(packed) == blocks


def test_blocks_over_the_budget_are_not_kept() -> None:
    noise = base64.b64encode(os.urandom(MAX_PACKED_CHARS)).decode()  # does not compress
    assert pack(json.dumps([noise])) is None


def test_a_damaged_or_inflating_annotation_reads_as_none() -> None:
    assert unpack("") == "" and unpack(None) == ""
    assert unpack("not base64 !") == ""
    assert unpack(base64.b64encode(b"not zlib").decode()) == ""
    bomb = base64.b64encode(zlib.compress(b"[" * (MAX_UNPACKED_BYTES + 1), 9)).decode()
    assert unpack(bomb) == ""
    truncated = base64.b64encode(zlib.compress(b"[1, 2, 3]")[:-4]).decode()
    assert unpack(truncated) == ""
