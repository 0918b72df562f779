"""The one-line progress display of a CLI command on a terminal (stderr).

Anything that takes more than about a second shows what it is doing ("reading nodes: 3 of 12
answered · 2.4 s"), redrawn in place and erased before the answer prints, as kubectl's and
docker's spinners are. Nothing at all when stderr is not a terminal (a pipe, a file, CI) or when
the output is for a program (``-o json|yaml``): a script must see exactly the answer.

The diagnosis tells it what it does through ``bot.engine.progress``; a small thread redraws the
line so the seconds keep counting while one read is slow.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from bot.console.terminal import is_tty, terminal_for

#: how long a command runs before the line appears (short commands never flicker)
DELAY_S = 1.0
#: how often the line is redrawn
TICK_S = 0.1
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: erase the current line (carriage return, clear to the end of the line)
ERASE = "\r\033[K"


class ProgressLine:
    """A progress line on ``stream``; use as a context manager, call it with what is being done."""

    def __init__(self, stream: TextIO, *, delay_s: float = DELAY_S) -> None:
        self.stream = stream
        self.delay_s = delay_s
        self.width = terminal_for(stream).width
        self._status = "starting"
        self._started = time.monotonic()
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpubot-progress", daemon=True)

    def __call__(self, status: str) -> None:
        self._status = status

    def __enter__(self) -> ProgressLine:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop redrawing and erase the line, so the answer starts on a clean line."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)
        with self._lock:
            if self._shown:
                self._write(ERASE)
                self._shown = False

    def _run(self) -> None:
        if self._stop.wait(self.delay_s):
            return
        tick = 0
        while not self._stop.is_set():
            elapsed = time.monotonic() - self._started
            line = f"{_SPINNER[tick % len(_SPINNER)]} {self._status} · {elapsed:.1f} s"
            with self._lock:
                if self._stop.is_set():
                    return
                self._write(ERASE + line[: max(self.width - 1, 10)])
                self._shown = True
            tick += 1
            self._stop.wait(TICK_S)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the answer matters, not the line
            self._stop.set()


class NoLine:
    """No terminal, or a program reads the output: nothing is shown."""

    def __call__(self, status: str) -> None:
        pass

    def __enter__(self) -> NoLine:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        pass


def progress_for(fmt: str, stream: TextIO | None = None) -> ProgressLine | NoLine:
    """The progress display for a command printing ``fmt``: a line on a terminal's stderr for the
    text formats, nothing for a pipe or for JSON and YAML."""
    stream = sys.stderr if stream is None else stream
    if fmt in ("json", "yaml") or not is_tty(stream):
        return NoLine()
    return ProgressLine(stream)
