"""Block Kit rendering: every Slack limit holds, whatever the report holds."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.report import CardRow, Finding, NodeRow, Remediation, Report
from bot.slack import blocks as B
from bot.slack import limits as L
from bot.slack.hooks import OfferButton
from bot.slack.plaintext import full_text
from bot.views.groups import distinct_fixes, fix_key


def _walk_text_objects(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") in ("mrkdwn", "plain_text") and "text" in node:
            found.append((path, node))
        for key, value in node.items():
            found += _walk_text_objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _walk_text_objects(value, f"{path}[{i}]")
    return found


def assert_within_limits(rendered: B.Rendered) -> None:
    blocks = rendered.blocks
    assert 1 <= len(blocks) <= L.MAX_BLOCKS
    assert len(json.dumps(blocks, ensure_ascii=False)) <= B.MAX_MESSAGE_JSON
    assert 0 < len(rendered.text) <= L.MAX_FALLBACK_TEXT
    block_ids = [b["block_id"] for b in blocks if "block_id" in b]
    assert len(block_ids) == len(set(block_ids)), "block_id must be unique in a message"
    for path, obj in _walk_text_objects(blocks):
        assert 0 < len(obj["text"]) <= L.MAX_SECTION_TEXT, path
    for block in blocks:
        if block["type"] == "header":
            assert block["text"]["type"] == "plain_text"
            assert len(block["text"]["text"]) <= L.MAX_HEADER
        if block["type"] == "section":
            text = block["text"]["text"]
            assert text.count("```") % 2 == 0, "a code block must always close"
        if block["type"] == "context":
            assert len(block["elements"]) <= L.MAX_CONTEXT_ELEMENTS
        if block["type"] == "actions":
            assert len(block["elements"]) <= L.MAX_ACTIONS_ELEMENTS
            action_ids = [e["action_id"] for e in block["elements"]]
            assert len(action_ids) == len(set(action_ids))
            for button in block["elements"]:
                if button["type"] == "static_select":  # a node picker: one option per target
                    assert len(button["placeholder"]["text"]) <= B.MAX_PLACEHOLDER
                    assert 1 <= len(button["options"]) <= B.MAX_PICKER_OPTIONS
                    for option in button["options"]:
                        assert len(option["text"]["text"]) <= L.MAX_BUTTON_TEXT
                        assert len(option["value"]) <= L.MAX_BUTTON_VALUE
                else:
                    assert len(button["text"]["text"]) <= L.MAX_BUTTON_TEXT
                    assert len(button["value"]) <= L.MAX_BUTTON_VALUE
                assert len(button["action_id"]) <= L.MAX_ID
                confirm = button["confirm"]
                assert len(confirm["title"]["text"]) <= L.MAX_CONFIRM_TITLE
                assert len(confirm["text"]["text"]) <= L.MAX_CONFIRM_TEXT
                assert len(confirm["confirm"]["text"]) <= L.MAX_CONFIRM_BUTTON
                assert len(confirm["deny"]["text"]) <= L.MAX_CONFIRM_BUTTON
                assert confirm["style"] == "danger"


def assert_distinct_buttons(blocks: list[dict[str, Any]]) -> None:
    """No two buttons of a message offer the same fix (nor carry the same offer)."""
    buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    values = [o["value"] for e in buttons for o in e.get("options") or [e]]
    assert len(values) == len(set(values)), values


def huge_report() -> Report:
    report = Report(
        command="why-pending",
        target={"kind": "Pod", "name": "p" * 250, "namespace": "ai"},
        cluster="c" * 300,
        elapsed_ms=12345,
    )
    severities = ["critical", "warning", "info"]
    for i in range(200):
        report.add(
            Finding(
                code=f"CODE_{i}",
                severity=severities[i % 3],  # type: ignore[arg-type]
                title=f"finding {i} " + "t" * 400,
                # 200 findings × 100 B = 20 kB of evidence, plus one 20 kB line below
                evidence=[f"evidence {i} <!channel> & ``` " + "e" * 60],
                explanation="x" * 5000,
                next_steps=[f"step {k} " + "s" * 900 for k in range(5)],
                remediations=[
                    Remediation(f"action.{k}" + "a" * 80, {"node": "n" * 100}, "blast radius " * 60)
                    for k in range(30)
                ],
            )
        )
    report.findings[0].evidence.append("E" * 20000)
    for n in range(100):
        report.skip(f"ssh node-{n}", "timeout " * 10)
    return report


def test_200_findings_and_20kb_evidence_respect_every_limit() -> None:
    report = huge_report()
    assert sum(len(e) for f in report.findings for e in f.evidence) >= 20000
    offers = {
        fix.key: OfferButton(f"offer-{n}-" + "v" * 2100, "hazard " * 60)
        for n, fix in enumerate(distinct_fixes(report.findings))
    }
    rendered = B.render_report(report, offers=offers)
    assert_within_limits(rendered)
    assert rendered.truncated and rendered.omitted > 150
    assert "did not fit" in json.dumps(rendered.blocks)
    # the verdict and the top cause are always shown, with its buttons
    assert rendered.blocks[1]["block_id"] == "verdict"
    assert any(b.get("block_id") == "finding-0" for b in rendered.blocks)
    assert any(b["type"] == "actions" for b in rendered.blocks)
    for page in B.render_details(report):
        assert_within_limits(page)
    # nothing is lost: the attached text holds every finding and all the evidence
    text = full_text(report)
    assert all(f"CODE_{i}:" in text for i in range(200))
    assert "E" * 20000 in text


def test_same_report_without_offer_hook_says_not_enabled() -> None:
    rendered = B.render_report(huge_report(), offers=None)
    assert_within_limits(rendered)
    assert not any(b["type"] == "actions" for b in rendered.blocks)
    assert B.NOT_ENABLED in json.dumps(rendered.blocks)


def test_user_controlled_text_is_escaped() -> None:
    report = Report(command="why-pending", target={"name": "p", "namespace": "ai"}, cluster="sim")
    report.add(
        Finding(
            "SCHED_UNRECOGNISED",
            "warning",
            "odd <!here> message",
            evidence=["<https://evil.example|click> & more"],
            next_steps=["<@U123> do it"],
        )
    )
    blocks = B.render_report(report).blocks
    # plain_text (the header) shows text literally; mrkdwn would turn these into pings and links
    dumped = json.dumps([o for _, o in _walk_text_objects(blocks) if o["type"] == "mrkdwn"])
    assert "<!here>" not in dumped and "<https://evil" not in dumped and "<@U123>" not in dumped
    assert "&lt;!here&gt;" in dumped


def test_small_report_is_not_truncated_and_has_markers_and_footer() -> None:
    report = Report(
        command="why-pending",
        target={"kind": "Pod", "name": "p", "namespace": "ai"},
        cluster="prod",
        elapsed_ms=1500,
    )
    report.add(Finding("POD_STATUS", "warning", "image pull back-off", evidence=["ErrImagePull"]))
    report.add(Finding("POD_RUNNING", "info", "context"))
    report.skip("ssh n1", "auth")
    rendered = B.render_report(report)
    assert not rendered.truncated
    assert rendered.blocks[0]["text"]["text"] == "🟠 pod ai/p"
    assert rendered.blocks[1]["text"]["text"] == "*Root cause:* image pull back-off\n_1 warning, 1 note_"
    dumped = json.dumps(rendered.blocks, ensure_ascii=False)
    assert "🔵" in dumped and "ErrImagePull" not in dumped  # evidence goes to the details
    (details,) = B.render_details(report)
    assert "```\\nErrImagePull\\n```" in json.dumps(details.blocks)
    footer = rendered.blocks[-1]["elements"][0]["text"]
    assert "prod" in footer and "1.5 s" in footer and "ssh n1 (auth)" in footer


def test_node_status_table_is_monospace_and_bounded() -> None:
    nodes = [
        NodeRow(
            node=f"gpu-node-{n}",
            ready=n % 7 != 0,
            cordoned=n % 5 == 0,
            ssh="ok" if n % 3 else "timeout",
            logical={"tke.cloud.tencent.com/qgpu-core": {"capacity": 200, "allocatable": 200, "requested": 100}},
            gpus=[
                CardRow(index=g, uuid=f"GPU-{n}-{g}", name="V100", utilization=3.0, memory_used_mib=0,
                        memory_total_mib=32510, temperature_c=33, power_w=30.1, verdict="idle")
                for g in range(8)
            ],
        )
        for n in range(1000)
    ]
    nodes.append(NodeRow(node="weird", ready=False, cordoned=False, ssh="timeout"))
    report = Report(command="node-status", target={"nodes": []}, cluster="sim", nodes=nodes[:300])
    rendered = B.render_report(report)
    assert_within_limits(rendered)
    assert not rendered.truncated, "300 nodes fit one message, a line each"
    report.nodes = nodes
    rendered = B.render_report(report)
    assert_within_limits(rendered)
    assert rendered.truncated
    first = rendered.blocks[1]["text"]["text"].splitlines()
    # one line per node: healthy ones plain, problems called out
    assert first[0] == "🔴 `gpu-node-0` · qgpu-core 100/200 · 8 GPUs: 8 idle · *NotReady, cordoned, not read (timeout)*"
    assert first[1] == "✅ `gpu-node-1` · qgpu-core 100/200 · 8 GPUs: 8 idle"
    assert rendered.blocks[0]["text"]["text"] == "🟠 all nodes: 544 of 1001 node(s) need a look"


def test_long_help_text_is_paginated_within_limits() -> None:
    text = "\n".join(f"line {i} " + "w" * 150 for i in range(2000))
    pages = B.paginate_text(text, title="runbook long")
    assert len(pages) > 1
    for page in pages:
        assert_within_limits(page)
    joined = "\n".join(b["text"]["text"] for p in pages for b in p.blocks if b["type"] == "section")
    assert "line 1999 " in joined


@settings(max_examples=40, deadline=None)
@given(
    titles=st.lists(st.text(min_size=1, max_size=400), min_size=0, max_size=60),
    evidence=st.lists(st.text(max_size=3000), max_size=5),
    summary=st.text(max_size=600),
)
def test_any_text_stays_within_limits(titles: list[str], evidence: list[str], summary: str) -> None:
    report = Report(command="nvml", target={"name": "p", "namespace": "n"}, cluster="x")
    for i, title in enumerate(titles):
        report.add(
            Finding(
                f"C{i}",
                "info",
                title,
                evidence=evidence,
                remediations=[Remediation("pod.delete", {"pod": title[:300]}, summary)],
            )
        )
    offers = {fix_key("pod.delete", {"pod": t[:300]}): OfferButton(f"id{i}") for i, t in enumerate(titles)}
    rendered = B.render_report(report, offers=offers)
    assert_within_limits(rendered)
    assert_distinct_buttons(rendered.blocks)
    for page in B.render_details(report):
        assert_within_limits(page)


def test_clip_helpers() -> None:
    assert L.clip("abcdef", 4) == "abc…"
    assert L.clip("abc", 4) == "abc"
    block = L.code_block("a&b\n" * 2000, 500)
    assert len(block) <= 500 and block.endswith("```") and block.count("```") == 2
    assert L.split_chunks(["a" * 10, "b" * 10, "c" * 10], 21) == ["a" * 10 + "\n" + "b" * 10, "c" * 10]


def test_cut_text_ends_at_a_boundary_and_the_thread_has_the_rest() -> None:
    """A long explanation and long next steps are cut between sentences or words, never inside a
    word, say "… (more in the thread)", and the details message carries them whole."""
    words = " ".join(f"word{i}" for i in range(250))  # no sentence end: the cut falls between words
    steps = [f"Read the per-card breakdown in the evidence {i}: {words}" for i in range(3)]
    explanation = " ".join(f"Sentence number {i} says one thing." for i in range(60))
    report = Report(command="why-pending", target={"kind": "Pod", "name": "p", "namespace": "ai"}, cluster="c")
    report.add(Finding("SCHED_QGPU_ALLOC_FAILED", "critical", "could not place ai/p", evidence=["x"],
                       explanation=explanation, next_steps=steps))
    rendered = B.render_report(report)
    text = next(b["text"]["text"] for b in rendered.blocks if b.get("block_id") == "finding-0")
    assert text.count(L.MORE_IN_THREAD) == 2  # the explanation and the steps
    for part in text.split(L.MORE_IN_THREAD)[:-1]:
        head = part.rstrip()
        assert head.endswith(".") or head.split()[-1].startswith("word") and head.split()[-1][4:].isdigit(), head[-80:]
    assert "Sentence number 59" not in text
    details = json.dumps([b for p in B.render_details(report) for b in p.blocks], ensure_ascii=False)
    assert "Sentence number 59 says one thing." in details and "word249" in details


def test_clip_prose_never_cuts_a_word() -> None:
    text = "alpha beta gamma delta epsilon"
    assert L.clip_prose(text, 100) == text
    assert L.clip_prose(text, 20, marker="…") == "alpha beta gamma…"
    assert L.clip_prose("One. Two three four five six seven.", 30, marker="…") == "One. Two three four five six…"


def test_a_cause_on_a_whole_fleet_names_its_first_nodes_and_no_wall_of_unbuttoned_fixes() -> None:
    """Forty zombie nodes, two fixes each, buttons not enabled: the heading names twenty nodes and
    counts the rest, and the missing buttons are one short line, not eighty fix labels."""
    nodes = [f"gpu-{i:03d}" for i in range(40)]
    report = Report(command="node-status", target={}, cluster="sim")
    for n in nodes:
        report.add(Finding("CHECKPOINT_ZOMBIE", "critical", f"zombie on {n}", subject=f"node/{n}", remediations=[
            Remediation("kubelet.restart", {"node": n}, f"Restart kubelet on {n}"),
            Remediation("checkpoint.clear", {"node": n}, f"Clear the checkpoint on {n}"),
        ]))
    rendered = B.render_report(report, offers=None)
    assert_within_limits(rendered)
    texts = [json.dumps(b) for b in rendered.blocks]
    head = next(t for t in texts if "`CHECKPOINT_ZOMBIE` on" in t)
    assert "gpu-019 and 20 more" in head and "gpu-020" not in head.split("and 20 more")[0]
    notes = [t for t in texts if B.NOT_ENABLED in t]
    assert len(notes) == 1 and "gpu-0" not in notes[0]


def test_a_report_of_notes_only_says_no_problem_and_what_to_look_at_next() -> None:
    report = Report(command="why-pending", target={"kind": "Pod", "name": "p", "namespace": "ai"})
    report.add(Finding("POD_RUNNING", "info", "ai/p is running on node n1", subject="pod/ai/p",
                       next_steps=["Read GPU load on the pod's own node: gpubot node-status n1"]))
    verdict = B.render_report(report).blocks[1]["text"]["text"]
    assert verdict.startswith("*No problem found:* ai/p is running on node n1")
    assert "*Next:* Read GPU load" in verdict and "Fix first" not in verdict and "Root cause" not in verdict
