"""The GPU-health parsers: nvidia-smi handle errors, the -q ECC report, the table, the kernel log.

Inputs are the texts real nodes print (quoted from public reports where noted); odd text must
give a skipped note, never an exception.
"""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.probes.gpu_health import (
    ECC_QUERY,
    has_kernel_lines,
    parse_ecc_report,
    parse_handle_errors,
    parse_kernel_log,
    parse_table,
    pci_key,
)
from bot.sim.nvidia_smi import render
from bot.sim.scenario import GpuFacts


def test_pci_addresses_in_every_spelling_become_one_key() -> None:
    assert pci_key("00000000:3B:00.0") == "0000:3b:00"
    assert pci_key("PCI:0000:3b:00") == "0000:3b:00"
    assert pci_key("GPU0000:A1:00.0: Unknown Error") == "0000:a1:00"
    assert pci_key("0000:b3:00.0") == "0000:b3:00"
    assert pci_key("no address here") == ""


def test_handle_errors_old_and_new_spelling() -> None:
    # akash-network/support#209 (535 driver) and NVIDIA/k8s-device-plugin#231 (2021 driver)
    text = (
        "Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error\n"
        "Unable to determine the device handle for GPU 0000:C1:00.0: GPU is lost.  "
        "Reboot the system to recover this GPU\n"
        "Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error\n"
    )
    lost = parse_handle_errors(text)
    assert [(g.pci, g.source) for g in lost] == [("0000:a1:00", "nvidia-smi"), ("0000:c1:00", "nvidia-smi")]
    assert "GPU is lost" in lost[1].text
    assert parse_handle_errors("No devices were found\n") == []


def test_table_finds_bus_ids_and_err_cells() -> None:
    gpus = [
        GpuFacts(0, "GPU-a", "NVIDIA A100-SXM4-80GB", 90, 70000, 81920, 70, 300),
        GpuFacts(1, "GPU-b", "NVIDIA A100-SXM4-80GB", 0, 0, 81920, 33, 60,
                 raw={"temperature.gpu": "[GPU is lost]", "power.draw": "[GPU is lost]"}),
    ]
    out, _, rc = render([], gpus, [], "535.161.07", "12.2")
    assert rc == 0
    table = parse_table(out)
    assert [(t.index, t.pci) for t in table] == [(0, "0000:1a:00"), (1, "0000:1b:00")]
    assert table[0].err_cells == 0 and table[1].err_cells >= 2


def test_table_of_an_old_driver_layout() -> None:
    # NVIDIA/k8s-device-plugin#75 (410 driver)
    text = """
|===============================+======================+======================|
|   0  Tesla V100-PCIE...  Off  | 00000000:61:00.0 Off |                    0 |
| N/A   33C    P0    25W / 250W |      0MiB / 16130MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
|   1  GeForce GTX 108...  Off  | 00000000:DA:00.0 Off |                  N/A |
| 23%   22C    P8    15W / 250W |      0MiB / 11178MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
"""
    assert [(t.index, t.pci, t.err_cells) for t in parse_table(text)] == [(0, "0000:61:00", 0), (1, "0000:da:00", 0)]


V100_ECC = """
==============NVSMI LOG==============

Timestamp                                 : Mon Mar  4 10:00:00 2024
Driver Version                            : 470.182.03
CUDA Version                              : 11.4

Attached GPUs                             : 1
GPU 00000000:3B:00.0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 12
                Register File             : 0
                Total                     : 12
            Double Bit
                Device Memory             : 2
                Register File             : 0
                Total                     : 2
        Aggregate
            Single Bit
                Total                     : 40
            Double Bit
                Total                     : 3
    Retired Pages
        Single Bit ECC                    : 0
        Double Bit ECC                    : 2
        Pending Page Blacklist            : Yes
    Remapped Rows                         : N/A
"""

H100_ECC = """
Attached GPUs                             : 2
GPU 00000000:18:00.0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 1
            DRAM Correctable              : 5
            DRAM Uncorrectable            : 1
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 1
            DRAM Correctable              : 5
            DRAM Uncorrectable            : 1
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 1
        Pending                           : Yes
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 2559 bank(s)
            High                          : 1 bank(s)
GPU 00000000:2A:00.0
    ECC Mode
        Current                           : N/A
        Pending                           : N/A
    ECC Errors
        Volatile
            SRAM Correctable              : N/A
            DRAM Uncorrectable            : N/A
"""


def test_ecc_report_pre_ampere_layout() -> None:
    (card,) = parse_ecc_report(V100_ECC)
    assert card.pci == "0000:3b:00" and card.ecc_mode == "Enabled"
    assert (card.volatile_uncorrected, card.aggregate_uncorrected) == (2, 3)
    assert card.retired_pending is True and card.remapped_pending is None and card.remap_failure is None


def test_ecc_report_hopper_layout_and_a_card_without_ecc() -> None:
    first, second = parse_ecc_report(H100_ECC)
    assert first.volatile_uncorrected == 2  # SEC-DED SRAM + DRAM, parity 0
    assert first.remapped_pending is True and first.remap_failure is False and first.retired_pending is None
    assert second.volatile_uncorrected is None and second.ecc_mode == "N/A"


def test_ecc_report_matches_what_the_simulator_prints() -> None:
    gpus = [
        GpuFacts(0, "GPU-a", "Tesla V100-SXM2-32GB", ecc_volatile_uncorrected=1, retired_pages_pending=True),
        GpuFacts(1, "GPU-b", "NVIDIA H100 80GB HBM3", remapped_rows_pending=True),
        GpuFacts(2, "GPU-c", "NVIDIA GeForce RTX 4090"),
    ]
    out, _, rc = render(shlex.split(ECC_QUERY)[1:], gpus, [], "535.161.07", "12.2")
    assert rc == 0
    cards = parse_ecc_report(out)
    assert [(c.volatile_uncorrected, c.retired_pending, c.remapped_pending) for c in cards] == [
        (1, True, None),
        (0, None, True),
        (None, None, None),
    ]


def test_ecc_block_without_address_is_a_note() -> None:
    problems: list[str] = []
    assert parse_ecc_report("GPU 00000000:ZZ:00.0\n    ECC Mode\n", problems=problems) == []
    assert parse_ecc_report("", problems=problems) == []


AKASH_DMESG = """\
[Thu Apr  4 18:03:56 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.07  Sat Feb 17 22:55:48 UTC 2024
[Fri Apr  5 21:29:39 2024] NVRM: GPU at PCI:0000:a1:00: GPU-979426f2-893a-7cbb-c4cf-81472f89a462
[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[Fri Apr  5 21:29:39 2024] NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.
[Fri Apr  5 21:29:39 2024] NVRM: A GPU crash dump has been created. If possible, please run
                           NVRM: nvidia-bug-report.sh as root to collect this data before
"""


def test_xid_79_from_a_real_dmesg() -> None:
    # akash-network/support#209
    log = parse_kernel_log(AKASH_DMESG)
    (xid,) = log.xids
    assert (xid.pci, xid.xid, xid.pid, xid.process) == ("0000:a1:00", 79, "<unknown>", "<unknown>")
    assert xid.text == "GPU has fallen off the bus." and xid.time == "Fri Apr  5 21:29:39 2024"
    assert [(e.pci, "fallen" in e.text) for e in log.errors] == [("0000:a1:00", True)]


def test_journal_lines_old_xid_format_and_multi_line_fall() -> None:
    text = (
        "-- Logs begin at Mon 2024-10-21 08:00:00 UTC. --\n"
        "2024-10-25T02:19:08+0000 gpu-h100-07 kernel: NVRM: Xid (PCI:0000:18:00): 94, pid=88123, "
        "name=python3, Contained: SM (0x1). RST: No, D-RST: No\n"
        "2024-10-25T02:20:00+0000 gpu-h100-07 kernel: NVRM: Xid (PCI:0000:05:00): 13, Graphics SM Warp "
        "Exception on (GPC 0, TPC 0): Out Of Range Address\n"
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
        "[   38.773764] NVRM: rm_init_adapter failed for device bearing minor number 0\n"
        "2024-10-25T02:21:00+0000 gpu-h100-07 kernel: EXT4-fs (md127p3): re-mounted. Quota mode: none.\n"
    )
    log = parse_kernel_log(text)
    assert [(x.xid, x.pci, x.pid, x.process) for x in log.xids] == [
        (94, "0000:18:00", "88123", "python3"),
        (13, "0000:05:00", "", ""),
    ]
    assert log.xids[0].time == "2024-10-25T02:19:08+0000"
    assert log.xids[1].text.startswith("Graphics SM Warp Exception")
    assert [(e.pci, e.minor) for e in log.errors] == [("0000:b3:00", None), ("", 0)]
    assert log.lines == 7  # the journal header is not a kernel line


def test_malformed_xid_lines_are_skipped_with_a_note() -> None:
    problems: list[str] = []
    log = parse_kernel_log("[1.0] NVRM: Xid (PCI:0000:3b:00): seventy-nine, pid=0, oops\n", problems=problems)
    assert log.xids == [] and problems and "unreadable Xid line" in problems[0]


def test_no_kernel_lines() -> None:
    assert not has_kernel_lines("-- No entries --\n")
    assert not has_kernel_lines("")
    assert has_kernel_lines("2024-01-01T00:00:00+0000 h kernel: hello\n")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_crashes_the_health_parsers(text: str) -> None:
    parse_handle_errors(text)
    parse_table(text)
    parse_ecc_report(text, problems=[])
    parse_kernel_log(text, problems=[])
    parse_kernel_log("[0.1] NVRM: Xid (PCI:" + text, problems=[])
    parse_ecc_report("GPU 00000000:3B:00.0\n" + text, problems=[])
