"""Entries for the journal fixtures (tests/data/journal/README.md): systemd-journal-remote reads
this export-format stream from stdin and writes real journal files from it."""

from __future__ import annotations

import sys

BOOT = "3c1f9a0e4b2d4e6f8a7b6c5d4e3f2a1b"
OLD = "0123456789abcdef0123456789abcdef"
BASE_US = 1767225600_000000  # 2026-01-01T00:00:00Z
DBE = (
    "NVRM: Xid (PCI:0000:3b:00): 48, pid=2345, name=python, An uncorrectable double bit error (DBE) has been "
    "detected on GPU in the framebuffer at partition 0, subpartition 0."
)
MMU = (
    "NVRM: Xid (PCI:0000:86:00): 31, pid=4242, name=python3, Ch 00000010, intr 00000000. MMU Fault: ENGINE "
    "GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
)
LOADED = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
LOST = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."


def entry(at_us: int, boot: str, message: str, priority: str = "3", transport: str = "kernel") -> str:
    fields = {
        "__REALTIME_TIMESTAMP": str(BASE_US + at_us),
        "__MONOTONIC_TIMESTAMP": str(at_us),
        "_BOOT_ID": boot,
        "_TRANSPORT": transport,
        "SYSLOG_IDENTIFIER": "kernel" if transport == "kernel" else "myapp",
        "_HOSTNAME": "gpu-node-1",
        "PRIORITY": priority,
        "MESSAGE": message,
    }
    return "".join(f"{key}={value}\n" for key, value in fields.items()) + "\n"


ENTRIES = [
    entry(1_000_000, OLD, LOST),
    entry(1_000_000, BOOT, "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)", "5"),
    entry(2_000_000, BOOT, "nvidia: loading out-of-tree module taints kernel.", "4"),
    entry(3_000_000, BOOT, LOADED, "6"),
    entry(60_000_000, BOOT, DBE),
    entry(61_000_000, BOOT, MMU),
    entry(62_000_000, BOOT, "NVRM: this line is from a user process, not the kernel", transport="syslog"),
    entry(90_000_000, BOOT, "NVRM: GPU at PCI:0000:3b:00: GPU-7a3c0000-1111-2222-3333-444455556666", "6"),
    entry(91_000_000, BOOT, LOST),
]

if __name__ == "__main__":
    sys.stdout.write("".join(ENTRIES))
