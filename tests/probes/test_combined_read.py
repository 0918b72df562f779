"""The combined first read: one constant command whose output parses back into each read."""

from __future__ import annotations

import shutil
import subprocess

from bot.probes.ssh import COMBINED_READ, FIRST_READS, READ_COMMANDS, frame_reads, split_reads


def test_a_real_shell_runs_it_and_every_section_parses_back() -> None:
    """On a host without the GPU tools every part fails in its own way; each failure lands in its
    own section with its own exit status and stderr."""
    out = subprocess.run(
        ["sh", "-c", COMBINED_READ], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False
    )
    results = split_reads(out.stdout)
    assert results is not None and list(results) == list(FIRST_READS)
    smi = results[FIRST_READS[0]]
    if shutil.which("nvidia-smi", path="/usr/bin:/bin") is None:
        assert smi.exit_status == 127 and "nvidia-smi" in smi.stderr and smi.stdout == ""
    cat = results[FIRST_READS[4]]
    assert cat.exit_status != 0 and "No such file" in cat.stderr


def test_frame_and_split_round_trip_keep_stdout_stderr_and_status_apart() -> None:
    parts = [
        (f"line {i}\nmore {i}\n" if i % 2 else "no newline", f"warn {i}\n" if i % 3 == 0 else "", i)
        for i in range(len(FIRST_READS))
    ]
    results = split_reads(frame_reads(parts))
    assert results is not None
    for command, (stdout, stderr, status) in zip(FIRST_READS, parts, strict=True):
        assert (results[command].stdout, results[command].stderr, results[command].exit_status) == (
            stdout,
            stderr,
            status,
        )


def test_an_answer_that_is_not_the_framing_is_refused_so_the_probe_falls_back() -> None:
    assert split_reads("") is None
    assert split_reads("sh: not permitted\n") is None
    partial = frame_reads([("", "", 0)] * (len(FIRST_READS) - 1))  # one section missing
    assert split_reads(partial) is None
    assert COMBINED_READ in READ_COMMANDS and all(c in READ_COMMANDS for c in FIRST_READS)
