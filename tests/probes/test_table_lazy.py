"""The nvidia-smi default table is parsed where it is used, and always where it shows ``ERR!``.

A fleet-wide node-status parses every node's answer on its event loop, and a healthy table (no
``ERR!`` cell, no lost card) tells nothing the query CSV has not: its parse waits until a check
asks for a card's PCI address. A table with ``ERR!`` cells is read at once, since those cells are
how a card the driver cannot reach shows up.
"""

from __future__ import annotations

from bot.probes import node
from bot.probes.observation import NodeObservation
from bot.probes.ssh import CommandResult

TABLE = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA A100-SXM4-80GB          On  |   00000000:07:00.0 Off |                    0 |
| N/A   {temp}    P0             {power} /  400W |       0MiB /  81920MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
"""
QUERY = "0, GPU-aaaa, NVIDIA A100-SXM4-80GB, 0, 0, 81920, 33, 60\n"


def _read(table: str) -> NodeObservation:
    obs = NodeObservation(node="gpu-1")
    node._read_nvidia_smi(obs, CommandResult(QUERY, "", 0), CommandResult("", "", 0), CommandResult(table, "", 0))
    return obs


def test_a_healthy_table_is_parsed_only_when_asked() -> None:
    obs = _read(TABLE.format(temp="33C", power="60W"))
    assert obs._table is None and obs.driver_version == "550.54.15" and obs.cuda_version == "12.4"
    pci = obs.table[0].pci
    assert obs._table is not None and obs.index_of(pci) == 0
    assert not obs.lost_gpus


def test_err_cells_are_read_at_once_and_make_the_card_lost() -> None:
    obs = _read(TABLE.format(temp="ERR!", power="ERR!"))
    assert obs._table is not None
    assert [(g.index, g.source) for g in obs.lost_gpus] == [(0, "table")]
