"""``NodeObservation``: what the allow-listed read commands showed on one node, as plain data.

Apart from ``bot.probes.node`` (which reads nodes over SSH or through the agent, and imports
asyncssh) so the checks that read observations, and the commands that load every check without
reading a node (``gpubot runbook``, ``help``), do not import the SSH stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from bot.probes.checkpoint import Checkpoint
from bot.probes.dcgm import DcgmReading
from bot.probes.devices import DevEntry, device_time_skew
from bot.probes.gpu_health import EccReading, KernelGpuError, LostGpu, TableGpu, XidEvent, parse_table
from bot.probes.nvidia_smi import GpuRow, ProcRow


@dataclass
class NodeObservation:
    """What the read commands showed on one node."""

    node: str
    gpus: list[GpuRow] = field(default_factory=list)
    processes: list[ProcRow] = field(default_factory=list)
    #: None = the file does not exist (or could not be read: see checkpoint_error)
    checkpoint: Checkpoint | None = None
    checkpoint_error: str = ""
    dev_nvidia: list[DevEntry] = field(default_factory=list)
    #: ``systemctl is-active kubelet`` output (active, inactive, failed, ...); where systemd gave
    #: no answer, the kubelet's Lease does (``active`` / ``not heartbeating``, ``kubelet_source``)
    kubelet: str = ""
    #: where ``kubelet`` comes from: the host's systemd, or the node's Lease in kube-node-lease
    kubelet_source: Literal["systemctl", "lease"] = "systemctl"
    driver_version: str = ""
    cuda_version: str = ""
    #: "host" = nvidia-smi on PATH; "operator" = reached through the GPU Operator's driver root
    driver_path: Literal["host", "operator"] = "host"
    #: where the agent found nvidia-smi when its PATH had none (``bot.agent.driver``'s ``where``:
    #: "host /home/kubernetes/bin/nvidia (bin/nvidia-smi, lib64)"); "" = on PATH, or over SSH
    nvidia_smi_from: str = ""
    #: nvidia-smi's own error when it could not read the cards (e.g. cannot reach the driver)
    nvidia_smi_error: str = ""
    #: cards the driver could not reach (handle errors, [GPU is lost] values, ERR! table cells)
    lost_gpus: list[LostGpu] = field(default_factory=list)
    #: the default table's text, parsed into ``table`` when first asked for
    table_text: str = field(default="", repr=False)
    _table: list[TableGpu] | None = field(default=None, repr=False)
    #: ECC counters, retired pages and remapped rows per card (empty: not read)
    ecc: list[EccReading] = field(default_factory=list)
    ecc_read: bool = False
    #: NVRM Xid lines and fallen-off-the-bus / init-failure lines of the kernel log
    xids: list[XidEvent] = field(default_factory=list)
    kernel_errors: list[KernelGpuError] = field(default_factory=list)
    #: where the kernel log came from: "journal", "dmesg", the agent's "journal-files" or
    #: "log-files" (``bot.agent.kernel_log``), or "" (could not be read)
    kernel_log: str = ""
    #: dcgm-exporter's answer for this node, where one runs there (``bot.engine.gather.dcgm``)
    dcgm: DcgmReading | None = None
    #: anything odd worth showing beside the facts (unreadable lines, failed commands)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    #: how many times something was added to the reading after it was read (the kubelet's Lease,
    #: dcgm-exporter): a value worked out of the reading as it arrived stands only for its
    #: revision then (``bot.engine.per_node``)
    revision: int = field(default=0, repr=False, compare=False)

    def revise(self) -> None:
        """Say that the reading was just added to (call it with every change after the read)."""
        self.revision += 1

    @property
    def device_skew(self) -> timedelta | None:
        return device_time_skew(self.dev_nvidia)

    @property
    def table(self) -> list[TableGpu]:
        """The default table's cards: index, PCI address, ERR! cells. Parsed on first use: a
        healthy node's table (no ``ERR!`` cell) is read only where a card turns out lost or a
        PCI address is needed, and a fleet-wide node-status parses 500 answers on its event loop
        (the table was half of each nvidia-smi parse)."""
        if self._table is None:
            self._table = parse_table(self.table_text)
        return self._table

    def index_of(self, pci: str) -> int | None:
        """The nvidia-smi index of the card at ``pci`` (from the table), if it was listed."""
        return next((t.index for t in self.table if t.pci == pci), None)
