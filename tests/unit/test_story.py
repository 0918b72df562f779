"""The pod's own story (bot.kube.story): events of every source folded and capped, newest first,
history told from news, containers and owners that say why, and its JSON shape on the report."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.console.render_text import render_text
from bot.kube.story import MAX_EVENTS, build_story, history_reason, needs_story, node_change_cutoff
from bot.report import Report

NOW = datetime(2026, 5, 7, 11, 0, tzinfo=UTC)
UID = "11111111-0000-4000-8000-000000000001"


def _pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": UID},
        "spec": {"schedulerName": "volcano", "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                 "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Pending", **status},
    }


def _event(reason: str, message: str, last: str, *, count: int = 1, source: str = "kubelet", uid: str = UID,
           kind: str = "Pod", name: str = "p", etype: str = "Warning") -> dict[str, Any]:
    return {"involvedObject": {"kind": kind, "name": name, "uid": uid}, "reason": reason, "message": message,
            "lastTimestamp": last, "count": count, "type": etype, "source": {"component": source}}


def test_events_are_folded_newest_first_and_capped() -> None:
    events = [_event("FailedMount", "volume x", "2026-05-07T10:00:00Z", count=3),
              _event("FailedMount", "volume x", "2026-05-07T10:05:00Z", count=2),
              _event("FailedCreate", "quota exceeded", "2026-05-07T10:06:00Z", kind="ReplicaSet", name="rs",
                     source="replicaset-controller")]
    events += [_event(f"R{i}", f"m{i}", f"2026-05-07T09:{i:02d}:00Z") for i in range(30)]
    story = build_story(_pod(), events=events, now=NOW)
    assert len(story.events) == MAX_EVENTS and story.events_total == 32
    assert story.events_omitted == 32 - MAX_EVENTS
    first, second = story.events[:2]
    assert (first.object, first.reason, first.source) == ("ReplicaSet/rs", "FailedCreate", "replicaset-controller")
    assert (second.reason, second.count, second.last) == ("FailedMount", 5, "2026-05-07T10:05:00Z")
    assert second.age_s == 55 * 60
    assert story.scheduler == "volcano" and story.gates == ["kueue.x-k8s.io/admission"]


def test_history_earlier_pod_and_before_scheduling() -> None:
    pod = _pod()
    old_pod = _event("FailedScheduling", "0/1 nodes", "2026-05-07T10:00:00Z", source="default-scheduler",
                     uid="someone-else")
    assert history_reason(old_pod, pod, None) == "about an earlier pod of the same name"
    placed = _pod(conditions=[{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-05-07T10:30:00Z"}])
    before = _event("FailedScheduling", "0/1 nodes", "2026-05-07T10:10:00Z", source="default-scheduler")
    after = _event("BackOff", "back-off", "2026-05-07T10:10:00Z")
    assert history_reason(before, placed, None).startswith("before the pod was scheduled")
    assert history_reason(after, placed, None) == ""  # only a scheduler's words are made history by scheduling


def test_node_change_cutoff_makes_older_scheduler_words_history() -> None:
    node = {"metadata": {"name": "gpu-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"capacity": {"nvidia.com/gpu": "2"}, "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-05-07T10:20:00Z"}]}}
    cpu = {"metadata": {"name": "cpu-1", "creationTimestamp": "2026-05-07T10:50:00Z"},
           "status": {"capacity": {"cpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]}}
    cutoff = node_change_cutoff(_pod(), {"gpu-1": node, "cpu-1": cpu})
    assert cutoff is not None and "gpu-1 became Ready" in cutoff.why  # a CPU node joining is no news for a GPU pod
    old = _event("FailedScheduling", "0/2 nodes", "2026-05-07T10:05:00Z", source="default-scheduler")
    new = _event("FailedScheduling", "0/2 nodes", "2026-05-07T10:25:00Z", source="default-scheduler")
    assert "the scheduler has not answered since" in history_reason(old, _pod(), cutoff)
    assert history_reason(new, _pod(), cutoff) == ""
    story = build_story(_pod(), events=[old], cutoff=cutoff, now=NOW)
    assert story.events[0].earlier and story.current_events == []
    assert any(line.startswith("earlier: ") for line in story.lines())


def test_containers_init_and_termination_tail() -> None:
    pod = _pod(initContainerStatuses=[
        {"name": "done", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "toolkit-validation", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                                             "message": "back-off 5m0s"}},
         "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                      "message": "line1\nline2\nline3\nnvidia-smi: not found\n"}}}])
    story = build_story(pod, now=NOW)
    (c,) = story.containers  # the init container that finished is not news
    assert (c.init, c.state, c.reason, c.restarts, c.last_exit_code) == (True, "waiting", "CrashLoopBackOff", 4, 1)
    assert c.termination_tail == "line2 | line3 | nvidia-smi: not found"
    assert "init container toolkit-validation waiting CrashLoopBackOff" in "\n".join(story.lines())


def test_owner_conditions_that_say_why() -> None:
    rs = {"kind": "ReplicaSet", "metadata": {"name": "rs"},
          "status": {"conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                                     "message": "pods \"x\" is forbidden: exceeded quota"}]}}
    ok = {"kind": "Deployment", "metadata": {"name": "d"}, "status": {"conditions": [
        {"type": "Available", "status": "True"}]}}
    story = build_story(_pod(), [rs, ok], now=NOW)
    assert [(o.kind, o.conditions[0].reason) for o in story.owners] == [("ReplicaSet", "FailedCreate")]


def test_needs_story() -> None:
    running = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                          "containerStatuses": [{"name": "c", "ready": True, "state": {"running": {}}}]},
               "spec": {"nodeName": "n"}}
    done = {"status": {"phase": "Succeeded"}, "spec": {"nodeName": "n"}}
    assert not needs_story(running) and not needs_story(done) and not needs_story(None)
    assert needs_story(_pod())


def test_story_on_the_report_json_and_text() -> None:
    story = build_story(_pod(), events=[_event("FailedScheduling", "0/3 nodes are unavailable", "2026-05-07T10:00:00Z",
                                               source="volcano")], now=NOW)
    report = Report(command="why-pending", target={"kind": "Pod", "name": "p", "namespace": "ns"}, story=story)
    data = report.to_dict()["story"]
    assert set(data) >= {"pod", "phase", "status", "scheduler", "node", "gates", "conditions", "containers",
                         "owners", "events", "events_total", "events_omitted"}
    assert {"object", "type", "reason", "message", "source", "count", "last", "age_s", "earlier",
            "earlier_why"} <= set(data["events"][0])
    text = render_text(report)
    assert "What the API says about it:" in text and "[volcano]" in text
    assert "story" not in Report(command="why-pending", target={}).to_dict()


def test_nfd_class_prefixed_nvidia_label_marks_a_gpu_node() -> None:
    from bot.kube.gpu import gpu_labels

    node = {"metadata": {"labels": {"feature.node.kubernetes.io/pci-0300_10de.present": "true",
                                    "feature.node.kubernetes.io/pci-0380_8086.present": "true"}}}
    assert gpu_labels(node) == ["feature.node.kubernetes.io/pci-0300_10de.present=true"]


def test_slack_shows_the_story_under_the_verdict_within_limits() -> None:
    from bot.report import Finding
    from bot.slack import limits as L
    from bot.slack.blocks import STORY_CHARS, render_report

    events = [_event(f"Reason{i}", "<!channel> " + "x" * 900, f"2026-05-07T10:{i:02d}:00Z") for i in range(40)]
    story = build_story(_pod(), events=events, now=NOW)
    report = Report(command="why-pending", target={"kind": "Pod", "name": "p", "namespace": "ns"}, story=story,
                    findings=[Finding("POD_NOT_RUNNING_UNEXPLAINED", "warning", "p is not running")])
    blocks = render_report(report).blocks
    assert [b.get("block_id") for b in blocks[1:2]] == ["verdict"]
    story_block = blocks[2]
    text = story_block["elements"][0]["text"]
    assert story_block["type"] == "context" and text.startswith("*What the API says:*")
    assert len(text) <= min(L.MAX_SECTION_TEXT, STORY_CHARS + 40)
    assert "<!channel>" not in text  # cluster text is escaped, never a mention


def test_a_workload_without_pods_tells_its_owners_story() -> None:
    from bot.kube.story import build_workload_story

    deploy = {"kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
              "spec": {"template": {"spec": {"schedulerName": "kai-scheduler"}}},
              "status": {"conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                                         "message": "pods \"d-1\" is forbidden: exceeded quota: gpu"}]}}
    event = _event("FailedCreate", 'Error creating: pods "d-1" is forbidden: exceeded quota: gpu',
                   "2026-05-07T10:00:00Z", kind="ReplicaSet", name="d-1", source="replicaset-controller")
    story = build_workload_story(deploy, [deploy], [event], status="1 desired, 0 created", now=NOW)
    lines = story.lines()
    assert lines[0] == "deployment ns/d: 1 desired, 0 created; it has no pod"
    assert lines[1] == "deployment/d ReplicaFailure=True (FailedCreate)"  # its words are the event's, shown once
    assert "exceeded quota: gpu" in lines[2] and story.scheduler == "kai-scheduler"
    assert story.to_dict()["kind"] == "Deployment"


def test_the_events_split_dates_each_event_once_and_keeps_the_order_of_one_moment() -> None:
    from bot.engine.facts import EventFacts
    from bot.kube.scheduling import failed_scheduling_events, timed_scheduling_events

    placed = _pod(conditions=[{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-05-07T10:30:00Z"}])
    events = [_event("FailedScheduling", f"0/{i} nodes", f"2026-05-07T10:{20 + i % 20:02d}:00Z",
                     source="default-scheduler", uid=UID if i % 7 else "someone-else") for i in range(40)]
    events.append(_event("FailedScheduling", "Failed to schedule pod, no nodepool", "2026-05-07T10:59:00Z",
                         source="karpenter"))
    timed = timed_scheduling_events(events)
    assert [e for _, e in timed] == failed_scheduling_events(events)
    assert len(timed) == 40 and "karpenter" not in str(timed)  # a provisioner's borrowed reason is not the scheduler's
    same = [e["message"] for _, e in timed if e["lastTimestamp"] == "2026-05-07T10:20:00Z"]
    assert same == ["0/0 nodes", "0/20 nodes"]  # one moment: the order they came in
    split = EventFacts(pod=events)
    split.age(placed, None)
    history = {id(e): why for e, why in split.scheduling_history}
    for _, e in timed:  # the same verdicts as asking history_reason of each event alone
        assert history.get(id(e), "") == history_reason(e, placed, None)
    assert len(split.scheduling) + len(history) == 40
