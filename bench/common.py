"""Shared plumbing of the benchmarks: a simulator in its own process, timing, tables, machine facts.

The simulator runs in a child process (``bench.simproc``) so that its CPU (JSON encoding, the SSH
servers' crypto) is not charged to the bot's wall time, and so that its own share can be read
from ``/proc/PID/stat`` around each measured run. Benchmarks only read from the simulator; they
must never point at a real cluster.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bot.exit_codes import ExitCode
from bot.settings import ClusterConfig, Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent
#: exit statuses of a gpubot run that answered (a benchmark's diagnosis usually reports findings)
ANSWERED = frozenset({ExitCode.OK, ExitCode.INCOMPLETE, ExitCode.FINDINGS})
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class SimProc:
    """A running simulator process and the settings that point gpubot at it."""

    pid: int
    info: dict[str, Any]
    workdir: Path

    def settings(self, **overrides: Any) -> Settings:
        cfg = self.info["cluster"]
        values: dict[str, Any] = {
            "clusters": (ClusterConfig(**cfg),),
            "ssh_user": self.info["ssh_user"],
            "state_path": str(self.workdir / "state.db"),
        }
        values.update(overrides)
        return load_settings(env={}, **values)

    @property
    def kubeconfig(self) -> str:
        return str(self.info["cluster"]["kubeconfig"])

    def config_file(self, **overrides: Any) -> str:
        """A gpubot config file (``GPUBOT_CONFIG``) pointing at this simulator, for CLI processes."""
        cfg = self.info["cluster"]
        values: dict[str, Any] = {
            "clusters": [{k: v for k, v in cfg.items() if v not in ("", None, {})}],
            "ssh_user": self.info["ssh_user"],
            "state_path": str(self.workdir / "state.db"),
            **overrides,
        }
        path = self.workdir / "gpubot.yaml"
        path.write_text(yaml.safe_dump(values), encoding="utf-8")
        return str(path)

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the simulator process has used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS

    @contextmanager
    def cores_apart(self) -> Iterator[str]:
        """The simulator on a core of its own, this process (the bot measured) on the others.

        The simulator stands for the nodes and the API server, which never share the bot's CPU
        on a real cluster. Left to the scheduler, a fan-out's thousands of small exchanges between
        the two processes often leave both queued on one core while the other idles (it places a
        woken task beside its waker): measured at 500 nodes, the SSH fan-out took 0.73-0.76 s so
        and 0.70 s with the two apart, the bot's CPU the same. Yields how the cores were shared
        ("apart: bot 0, simulator 1", or "shared" where there are not two cores to split);
        every thread of both is pinned, and restored on exit. Children started inside inherit the
        bot's cores, so it suits benchmarks whose measured work is this process alone."""
        allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if len(allowed) < 2:
            yield "shared"
            return
        own, sim = allowed[:-1], allowed[-1:]
        _pin(os.getpid(), own)
        _pin(self.pid, sim)
        try:
            yield f"apart: bot {','.join(map(str, own))}, simulator {sim[0]}"
        finally:
            _pin(os.getpid(), allowed)
            _pin(self.pid, allowed)


def _pin(pid: int, cores: Sequence[int]) -> None:
    """Every thread of ``pid`` on ``cores`` (a thread that ended meanwhile is skipped)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cores)
        except (ProcessLookupError, FileNotFoundError):
            continue


@contextmanager
def sim_process(spec: str, *, timeout: float = 300.0) -> Iterator[SimProc]:
    """Start ``bench.simproc`` on a generated scenario; stop it on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="gpubot-bench-"))
    info_path = workdir / "info.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.simproc", spec, str(workdir)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + timeout
        while not info_path.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"simulator exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError("simulator did not start")
            time.sleep(0.05)
        info = json.loads(info_path.read_text())
        yield SimProc(proc.pid, info, workdir)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # the simulator stops when its stdin closes
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def in_turns(runs: Mapping[str, tuple[int, Callable[[], Any]]]) -> dict[str, list[Any]]:
    """``{name: (times, run)}`` run in turns (a, b, c, a, b, c, ...), the results by name.

    A ratio of two medians is only as fair as the moments they were measured in: on a shared
    machine a slow minute that falls on one procedure's block of runs and not on the other's moves
    the ratio by more than the change being measured. In turns, each meets the machine alike."""
    out: dict[str, list[Any]] = {name: [] for name in runs}
    for i in range(max((times for times, _ in runs.values()), default=0)):
        for name, (times, run) in runs.items():
            if i < times:
                out[name].append(run())
    return out


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model or platform.processor(),
        "cores": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def emit(name: str, text: str, result: dict[str, Any]) -> None:
    """Print the table, then one JSON line that run_all collects."""
    print(text, flush=True)
    print("BENCH_JSON " + json.dumps({"bench": name, **result}), flush=True)


#: how much the peak RSS may grow from the first steady sweep to the last (allocator noise)
RSS_GROWTH_LIMIT_MB = 10.0


def rss_text(r: dict[str, Any]) -> str:
    """``175 → 177 → 177 (+2, traced 211)``: each steady sweep's peak, the growth, the traced one."""
    steady = " → ".join(f"{m:.0f}" for m in r["rss_mb_by_sweep"])
    traced = f", traced {r['traced_rss_mb']:.0f}" if "traced_rss_mb" in r else ""
    return f"{steady} ({r.get('rss_growth_mb', 0.0):+.0f}{traced})"
