"""``pods/exec`` over WebSocket, speaking the ``v4``/``v5.channel.k8s.io`` subprotocols.

The official client's ``kubernetes.stream.stream`` and ``kubectl exec`` (1.30+ uses WebSocket
v5) both connect here. Each binary frame starts with a channel byte: 1 stdout, 2 stderr,
3 the final Status JSON (whose causes carry the exit code). Validation happens before the
upgrade, so a missing pod or container is an ordinary HTTP Status error. Output comes from
``exec_commands``; this module only frames it and never runs anything.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.probes.node_agent import NSENTER
from bot.sim.agents import exec_mode, is_actuator_pod, is_agent_pod
from bot.sim.exec_commands import ExecTarget, answer
from bot.sim.kube_status import status_response
from bot.sim.scenario import Scenario

SUBPROTOCOLS = (
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
)
STDOUT, STDERR, ERROR, CLOSE = 1, 2, 3, 255

ExecLogEntry = tuple[str, str, str, tuple[str, ...], int]


def exit_status(code: int) -> dict[str, Any]:
    """The Status the kubelet sends on channel 3 when the command ends."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command [exit {code}]",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def _pick_container(pod: dict[str, Any], requested: str | None) -> tuple[str | None, str | None]:
    """(container, error message) the way the API chooses the exec target."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])]
    if requested:
        if requested not in names:
            return None, f"container {requested} is not valid for pod {name}"
        return requested, None
    main = [c.get("name") for c in spec.get("containers") or []]
    default = (pod["metadata"].get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
    if default in main:
        return default, None
    if len(main) == 1:
        return main[0], None
    choices = " ".join(map(str, main))
    return None, f"a container name must be specified for pod {name}, choose one of: [{choices}]"


#: (node, command line) -> (stdout, stderr, exit code): a node read, as the node's SSH server answers it
NodeRead = Callable[[str, str], Awaitable[tuple[str, str, int]]]


#: (node, command line) -> (stdout, stderr, exit code, the stream is cut after it ran): a command
#: the node's actuator runs in the host, as the node's SSH server runs and applies it
NodeWrite = Callable[[str, str], Awaitable[tuple[str, str, int, bool]]]


def _not_found(word: str) -> tuple[str, str, int]:
    return "", f"sh: 1: {word}: not found\n", 127


async def _agent_answer(node_read: NodeRead | None, node: str, argv: list[str]) -> tuple[str, str, int]:
    """An agent pod runs ``sh -c LINE`` for the node read commands; the node's facts answer them."""
    if node_read is None or len(argv) != 3 or argv[:2] != ["sh", "-c"]:
        return _not_found(argv[0] if argv else "")
    return await node_read(node, argv[2])


async def _actuator_answer(node_write: NodeWrite | None, node: str, argv: list[str]) -> tuple[str, str, int, bool]:
    """An actuator pod runs ``nsenter -t 1 -m -u -i -n -- COMMAND`` in the host (``node_write``
    answers only the actuator's list); an argv without that prefix fails as a shell would."""
    if node_write is None or tuple(argv[: len(NSENTER)]) != NSENTER or len(argv) == len(NSENTER):
        return (*_not_found(argv[0] if argv else ""), False)
    return await node_write(node, " ".join(argv[len(NSENTER) :]))


async def handle_exec(
    request: web.Request,
    scenario: Scenario,
    pod: dict[str, Any],
    log: Callable[[ExecLogEntry], None],
    node_read: NodeRead | None = None,
    node_write: NodeWrite | None = None,
) -> web.StreamResponse:
    """Serve one exec request for an existing pod (the caller already returned 404 otherwise).

    An exec into a gpubot-node agent pod answers from its node's facts (``node_read``), one into a
    gpubot-actuator pod runs the write on the node (``node_write``); each fails the way the node's
    ``agent`` or ``actuator`` mode says: 403, an upstream error, a hang or a cut stream. A write
    whose node has a ``drop_connection_after`` fault armed takes effect, then its stream is cut
    before the exit status, as the SSH connection would be.
    """
    query = request.query
    argv = query.getall("command", [])
    name = pod["metadata"]["name"]
    if not argv:
        return status_response(400, "you must specify at least 1 command", name=name, kind="pods")
    container, problem = _pick_container(pod, query.get("container"))
    if container is None:
        return status_response(400, problem or "invalid container", name=name, kind="pods")
    if not (pod.get("spec") or {}).get("nodeName"):
        return status_response(400, f"pod {name} does not have a host assigned", name=name, kind="pods")
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        message = f"cannot exec into a container in a completed pod; current phase is {phase}"
        return status_response(400, message, name=name, kind="pods")
    node = str(pod["spec"]["nodeName"])
    mode = exec_mode(scenario, pod)
    if mode == "forbidden":
        message = f'pods "{name}" is forbidden: User cannot create resource "pods/exec" in this namespace'
        return status_response(403, message, name=name, kind="pods")
    if mode == "unreachable":
        message = f"error dialing backend: dial tcp {node}:10250: connect: connection refused"
        return status_response(500, message, name=name, kind="pods")
    ws = web.WebSocketResponse(protocols=SUBPROTOCOLS, heartbeat=None, autoclose=True)
    if not ws.can_prepare(request).ok:
        return status_response(
            400, "Upgrade request required: this simulator serves exec over WebSocket only", name=name
        )
    await ws.prepare(request)
    if mode == "hang":
        async for _ in ws:  # say nothing until the client gives up and closes
            pass
        return ws
    cut = False
    if is_agent_pod(pod):
        stdout, stderr, code = await _agent_answer(node_read, node, list(argv))
    elif is_actuator_pod(pod):
        stdout, stderr, code, cut = await _actuator_answer(node_write, node, list(argv))
    else:
        stdout, stderr, code = answer(ExecTarget.resolve(scenario, pod, container), list(argv))
    log((pod["metadata"].get("namespace", ""), name, container, tuple(argv), code))
    if mode == "truncated" or cut:
        # the connection drops mid-answer: half the output, no exit status
        await ws.send_bytes(bytes([STDOUT]) + stdout[: len(stdout) // 2].encode())
        await ws.close()
        return ws
    if query.get("stdout", "true").lower() in ("true", "1") and stdout:
        await ws.send_bytes(bytes([STDOUT]) + stdout.encode())
    if query.get("stderr", "true").lower() in ("true", "1") and stderr:
        await ws.send_bytes(bytes([STDERR]) + stderr.encode())
    await ws.send_bytes(bytes([ERROR]) + json.dumps(exit_status(code)).encode())
    await ws.close()
    return ws
