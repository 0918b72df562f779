"""Pure Kubernetes logic the diagnosis rests on: scheduler messages, taints, node affinity,
resource requests and pod status, all computed from plain API dicts.

Nothing in this package performs I/O, imports a client, or mutates its inputs; that is what
lets every rule here be tested with small dict fixtures and reused by any probe or check.
"""

from bot.kube.affinity import MatchResult, describe_selection, matching_nodes, node_matches
from bot.kube.pod_status import PodState, classify
from bot.kube.resources import (
    GPU_RESOURCE_PATTERNS,
    QGPU_CORE,
    QGPU_MEMORY,
    SpecProblem,
    container_gpu_resources,
    container_requests,
    gpu_family,
    is_gpu_resource,
    node_gpu_capacity,
    parse_quantity,
    pod_gpu_requests,
    pod_requests,
    spec_problems,
)
from bot.kube.scheduling import (
    CardState,
    ParsedSchedulingMessage,
    QgpuAllocFailure,
    Reason,
    TaintRef,
    decode_qgpu,
    failed_scheduling_events,
    parse_event_messages,
    parse_scheduling_message,
)
from bot.kube.taints import (
    UNSCHEDULABLE_TAINT,
    UNSCHEDULABLE_TAINT_KEY,
    node_taints,
    suggest_toleration,
    taint_str,
    tolerates,
    toleration_yaml,
    untolerated_taints,
)

__all__ = [
    "GPU_RESOURCE_PATTERNS",
    "QGPU_CORE",
    "QGPU_MEMORY",
    "UNSCHEDULABLE_TAINT",
    "UNSCHEDULABLE_TAINT_KEY",
    "CardState",
    "MatchResult",
    "ParsedSchedulingMessage",
    "PodState",
    "QgpuAllocFailure",
    "Reason",
    "SpecProblem",
    "TaintRef",
    "classify",
    "container_gpu_resources",
    "container_requests",
    "decode_qgpu",
    "describe_selection",
    "failed_scheduling_events",
    "gpu_family",
    "is_gpu_resource",
    "matching_nodes",
    "node_gpu_capacity",
    "node_matches",
    "node_taints",
    "parse_event_messages",
    "parse_quantity",
    "parse_scheduling_message",
    "pod_gpu_requests",
    "pod_requests",
    "spec_problems",
    "suggest_toleration",
    "taint_str",
    "toleration_yaml",
    "tolerates",
    "untolerated_taints",
]
