"""Closing the state database while other threads run statements on it must not crash the process.

CI loop run 7 (issue 29 point 8): a pytest worker died of a segfault when ``gpubot serve`` shut down
while a sweep listed offers in a worker thread: ``close()`` closed that thread's connection in the
middle of its statement, which CPython's sqlite3 does not guard against. Run in a subprocess, so
a crash is a failed assertion here and not a dead test worker; with the old ``close()`` this
subprocess died with SIGSEGV on the first try.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STRESS = """
import sqlite3, sys, threading, time
from bot.state.sqlite import SqliteDatabase
db = SqliteDatabase(sys.argv[1])
db.connection().execute("CREATE TABLE t (x)")
db.connection().executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(20000)])
stop = False
def reader():
    while not stop:
        try:
            db.connection().execute("SELECT sum(x) FROM t").fetchall()
        except sqlite3.Error:
            pass
threads = [threading.Thread(target=reader) for _ in range(3)]
for t in threads:
    t.start()
for _ in range(200):
    time.sleep(0.002)
    db.close()
stop = True
for t in threads:
    t.join()
print("ok")
"""


def test_close_while_other_threads_run_statements_does_not_crash(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", STRESS, str(tmp_path / "state.db")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok"), (proc.returncode, proc.stderr[-2000:])
