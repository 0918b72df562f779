"""The node-status benchmark's simulator on a core of its own: pinned inside, as before after."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.common import SimProc


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this platform")
def test_the_simulator_and_every_thread_of_the_measured_process_are_kept_apart_then_restored(tmp_path: Path) -> None:
    before = os.sched_getaffinity(0)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    parked = threading.Event()
    waiter = threading.Thread(target=parked.wait)  # started before: its affinity is set too
    waiter.start()
    try:
        sim = SimProc(child.pid, {}, tmp_path)
        with sim.cores_apart() as cores:
            own, theirs = os.sched_getaffinity(0), os.sched_getaffinity(child.pid)
            thread = os.sched_getaffinity(waiter.native_id)
        if len(before) < 2:
            assert cores == "shared"
            assert own == theirs == before
        else:
            assert own | theirs == before and not own & theirs
            assert thread == own
            assert len(theirs) == 1
            assert cores == f"apart: bot {','.join(map(str, sorted(own)))}, simulator {min(theirs)}"
        assert os.sched_getaffinity(0) == before
        assert os.sched_getaffinity(child.pid) == before
        assert os.sched_getaffinity(waiter.native_id) == before
    finally:
        parked.set()
        waiter.join()
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
