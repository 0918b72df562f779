"""Where loaders read from: the cluster's API reader, exec into pods, and the node transport."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.engine.progress import Progress, no_progress
from bot.probes.container import ExecFn
from bot.probes.kube import KubeReads
from bot.probes.node_agent import NodeExecFn
from bot.probes.node_memo import NodeReadMemo
from bot.probes.ssh_pool import SshPool
from bot.settings import ClusterConfig, Settings

NO_EXEC = "exec is not available for this cluster"


@dataclass
class Sources:
    """Everything a loader may read through, built once per question: the loaders take what they
    need from here and never build a client of their own."""

    kube: KubeReads
    settings: Settings
    cluster: ClusterConfig
    #: exec of allow-listed reads into a container; None where exec is not available
    exec_fn: ExecFn | None = None
    #: why, when ``exec_fn`` is None (reported as the skipped reason)
    exec_unavailable: str = NO_EXEC
    #: kept SSH connections (long-running bot only); None = one connection per node per question
    ssh_pool: SshPool | None = None
    #: exec of the node read commands into a node's agent pod (``node_access: agent``)
    node_exec: NodeExecFn | None = None
    #: nodes whose last read timed out (long-running bot only): the next read starts them first,
    #: so a node that costs its whole deadline costs it while the others are read, not after
    slow_nodes: set[str] | None = None
    #: told what is being read as it happens (the CLI's progress line on a terminal)
    progress: Progress = field(default=no_progress)
    #: node readings shared by the diagnoses of one answer (``gpubot pending``); None: read afresh
    node_memo: NodeReadMemo | None = None
