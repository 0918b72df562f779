"""The agent's kernel-log read against real journal files (tests/data/journal) and text logs.

The journal files were written by systemd itself (systemd-journal-remote 252), in both layouts;
the pure-Python reader must give exactly the kernel NVRM lines journalctl gives for the boot, and
the agent's output must parse into the same Xid events. A source it cannot read is never an empty
log: it says why and exits 1.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import pytest

from bot.agent import kernel_log
from bot.agent.journal_files import read_directory
from bot.probes import agent_reads
from bot.probes.gpu_health import parse_kernel_log

DATA = Path(__file__).resolve().parents[1] / "data" / "journal"
BOOT = "3c1f9a0e4b2d4e6f8a7b6c5d4e3f2a1b"
OLD_BOOT = "0123456789abcdef0123456789abcdef"


def _journal_dir(tmp_path: Path, layout: str) -> Path:
    folder = tmp_path / "journal" / "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    folder.mkdir(parents=True)
    (folder / "system.journal").write_bytes(gzip.decompress((DATA / f"{layout}.journal.gz").read_bytes()))
    # a user journal holds no kernel lines and is not read
    (folder / "user-1000.journal").write_bytes(b"not a journal")
    return tmp_path / "journal"


def _proc(tmp_path: Path, boot: str, btime: int = 1767225600) -> Path:
    proc = tmp_path / "proc"
    (proc / "sys/kernel/random").mkdir(parents=True)
    dashed = f"{boot[:8]}-{boot[8:12]}-{boot[12:16]}-{boot[16:20]}-{boot[20:]}"
    (proc / "sys/kernel/random/boot_id").write_text(dashed + "\n")
    (proc / "stat").write_text(f"cpu  1 2 3\nbtime {btime}\n")
    return proc


@pytest.mark.parametrize("layout", ["compact", "regular"])
def test_the_kernel_nvrm_lines_of_each_boot_from_real_journal_files(tmp_path: Path, layout: str) -> None:
    found = read_directory(_journal_dir(tmp_path, layout))
    assert found.files == 1 and not found.problems
    by_boot = [(line.boot_id, line.message[:30]) for line in found.lines]
    assert by_boot == [
        (OLD_BOOT, "NVRM: Xid (PCI:0000:3b:00): 79"),
        (BOOT, "NVRM: loading NVIDIA UNIX x86_"),
        (BOOT, "NVRM: Xid (PCI:0000:3b:00): 48"),
        (BOOT, "NVRM: Xid (PCI:0000:86:00): 31"),
        (BOOT, "NVRM: GPU at PCI:0000:3b:00: G"),
        (BOOT, "NVRM: Xid (PCI:0000:3b:00): 79"),
    ], "the user-space line that mentions NVRM is not a kernel line"
    # the same Xid 79 text in two boots is one DATA object: its second entry is in an entry array
    assert [line.realtime_us for line in found.lines][-1] == 1767225691000000


@pytest.mark.parametrize("layout", ["compact", "regular"])
def test_the_agent_prints_this_boots_xids_from_the_journal(tmp_path: Path, layout: str) -> None:
    directory = _journal_dir(tmp_path, layout)
    read = kernel_log.read_kernel_log([("journal", str(directory))], proc=_proc(tmp_path, BOOT))
    text = kernel_log.render(read)
    assert agent_reads.parse_header(text) == ("journal-files", f"{directory} (1 file, this boot)")
    assert text.splitlines()[2] == (
        "2026-01-01T00:01:00+0000 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=2345, name=python, An "
        "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, "
        "subpartition 0."
    )
    log = parse_kernel_log(text)
    assert [(x.pci, x.xid, x.pid, x.process) for x in log.xids] == [
        ("0000:3b:00", 48, "2345", "python"), ("0000:86:00", 31, "4242", "python3"), ("0000:3b:00", 79, "0", ""),
    ]
    assert log.lines == 5


def test_a_journal_that_ends_before_this_boot_is_not_this_boots_log(tmp_path: Path) -> None:
    directory = _journal_dir(tmp_path, "compact")
    logs = tmp_path / "kern.log"
    logs.write_text(
        "2026-01-01T00:00:00.1+00:00 gpu-a kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, Graphics Exception\n"
        "2026-03-01T00:00:00.0+00:00 gpu-a kernel: Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115)\n"
        "2026-03-01T00:00:09.5+00:00 gpu-a kernel: NVRM: Xid (PCI:0000:3b:00): 94, pid=77, name=train, "
        "Contained: SM (0x1). RST: No, D-RST: No\n"
        "2026-03-01T00:00:10.0+00:00 gpu-a systemd[1]: NVRM is only a word here\n"
    )
    proc = _proc(tmp_path, "ffffffffffffffffffffffffffffffff", btime=1772323200)  # 2026-03-01
    read = kernel_log.read_kernel_log([("journal", str(directory)), ("file", str(logs))], proc=proc)
    assert read.unreadable == [f"journal {directory}: no journal file covers this boot (1 older)"]
    assert (read.source, read.detail) == ("log-files", "since the last boot banner")
    assert [x.xid for x in parse_kernel_log(kernel_log.render(read)).xids] == [94]


def test_no_readable_source_says_what_was_tried_and_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private = tmp_path / "journal"
    private.mkdir()
    monkeypatch.setenv(kernel_log.ENV, f"journal={private},file={tmp_path}/messages,bogus=/x,file=relative")
    out, err = io.StringIO(), io.StringIO()
    assert kernel_log.main(out, err) == 1
    assert out.getvalue() == "-- gpubot kernel log: none\n"
    assert agent_reads.parse_header(out.getvalue()) == ("", "")
    assert err.getvalue().splitlines() == [
        f"journal {private}: no system journal files in {private}",
        f"file {tmp_path}/messages: No such file or directory",
    ]


def test_a_journal_file_it_may_not_open_is_unreadable_not_empty(tmp_path: Path) -> None:
    directory = _journal_dir(tmp_path, "regular")
    path = next(directory.glob("*/system.journal"))
    if os.geteuid() == 0:
        # root opens a 0000 file anyway: a directory in the file's place refuses every user
        path.unlink()
        path.mkdir()
        refusal = "Is a directory"
    else:
        path.chmod(0)
        refusal = "Permission denied"
    read = kernel_log.read_kernel_log([("journal", str(directory))], proc=_proc(tmp_path, BOOT))
    assert not read.source and refusal in read.unreadable[0]


def test_a_journal_cut_short_is_read_up_to_its_last_whole_object(tmp_path: Path) -> None:
    directory = _journal_dir(tmp_path, "compact")
    path = next(directory.glob("*/system.journal"))
    whole = path.read_bytes()
    complete = [line.message for line in read_directory(directory).lines]
    tail = int.from_bytes(whole[136:144], "little")
    path.write_bytes(whole[: tail + 20])  # the last object (an entry array) cut in its middle
    cut = read_directory(directory)
    assert not cut.problems and {line.message for line in cut.lines} <= set(complete)
    path.write_bytes(b"LPKSHHRH" + b"\0" * 10)
    assert read_directory(directory).problems == ["system.journal: not a journal file (no LPKSHHRH signature)"]
