"""Runbook loading and validation: the shipped runbooks, broken fixtures, templates and guides.

Broken fixtures live in tests/data/runbooks-broken/: each file states the problems it must
produce in ``# expect: LINE: problem`` header lines. A fixture is validated together with a small
valid set (a catalogue, a demo diagnosis and the shipped guides), so the expected lines are the
only problems.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.engine.check import Check, Outcome
from bot.engine.checks import builtin_checks
from bot.engine.runbook_model import DOCS_STEP
from bot.engine.runbook_text import placeholder_problems, render_title
from bot.engine.runbooks import (
    RunbookSet,
    default_runbook_dir,
    list_guides,
    load_runbooks,
    render_guide_text,
    render_template,
    validate_dir,
)
from bot.engine.unreadable import CODES as READ_CODES
from bot.errors import RunbookError, UsageError
from bot.registry import ACTION_NAMES, ACTIONS
from bot.yamlio.marks import MAX_ALIAS_NODES, MAX_NODES, YamlSyntaxError, parse_yaml

REPO = Path(__file__).resolve().parents[2]
RUNBOOKS = REPO / "runbooks"
BROKEN = REPO / "tests" / "data" / "runbooks-broken"

#: the public codes of shared/findings.md, pinned: the catalogue must word every one
FINDINGS_MD_CODES = [
    "POD_NOT_FOUND",
    "POD_RUNNING",
    "POD_STATUS",
    "SCHED_INSUFFICIENT_GPU",
    "SCHED_INSUFFICIENT_OTHER",
    "SCHED_QGPU_ALLOC_FAILED",
    "SCHED_UNTOLERATED_TAINT",
    "SCHED_NODE_SELECTOR_MISMATCH",
    "SCHED_WEBHOOK_DENIED",
    "SCHED_UNSCHEDULABLE_NODE",
    "SCHED_UNRECOGNISED",
    "SPEC_MIXED_GPU_RESOURCES",
    "SPEC_ZERO_CPU_MEMORY",
    "SPEC_WHOLE_CARD_SHARED",
    "QGPU_OPERATOR_MISSING",
    "QGPU_NODE_NO_CAPACITY",
    "QGPU_NS_POLICY_MISSING",
    "QGPU_NS_POLICY_INVALID",
    "NS_SYSTEM_CLASSIFIED",
    "CAPACITY_EXHAUSTED",
    "TERMINATING_HOLDS_GPU",
    "LEAK_LOGICAL_NOT_PHYSICAL",
    "ALLOCATION_REAL",
    "CHECKPOINT_ZOMBIE",
    "NODE_UNREACHABLE",
    "NODE_NOT_READY",
    "NODE_CORDONED",
    "GPU_IDLE",
    "GPU_BUSY",
    "QGPU_CORE_OVER_QUOTA",
    "NVML_CGROUP_LOST",
    "TORCH_CPU_BUILD",
    "DRIVER_TOO_OLD",
    "PID1_SHELL",
    "SPEC_QGPU_INVALID",
]

#: the field-notes sections (§1-§11 of the 2026-05-07 notes, the 05-08 checkpoint zombie, the
#: 05-11 qGPU leak, the closing quick reference) and facts each covering guide must state
FIELD_NOTES_SECTIONS: dict[str, list[str]] = {
    "1": ["nvidia.com/gpu: 1", "tke.cloud.tencent.com/qgpu-core", "qgpu-memory", "never both"],
    "2": [
        "grep -i qgpu",
        "qgpu-core: 100",
        "qgpu-schedule-policy",
        "best-effort",
        "fixed-share",
        "burst-share",
    ],
    "3": ["kubernetes.io/metadata.name", "System", "Tenant", "diff /tmp/good.yaml /tmp/bad.yaml"],
    "4": [
        "Failed to initialize NVML",
        "/proc/driver/nvidia/version",
        "daemon-reload",
        "no-cgroups = true",
        "privileged",
        "timestamps",
    ],
    "5": [
        "TAINTS:.spec.taints",
        "<none>",
        "nvidia.com/gpu=true:NoSchedule",
        'operator: "Exists"',
        "node-role.kubernetes.io/master",
    ],
    "6": [
        "grep -vE 'Running|Completed'",
        "-o wide",
        "tail -50",
        "ContainerCreating",
        "ImagePullBackOff",
        "CrashLoopBackOff",
        "READY 0/1",
        "OOMKilled",
        "untolerated taint",
        "node affinity/selector",
        "admission webhook",
    ],
    "7": ["{.spec.nodeName}", "ssh", "0 %"],
    "8": [
        "torch.version.cuda",
        "None",
        "/dev/nvidia*",
        "env | grep",
        "4096",
        "about 3 ms",
        "15-20 ms",
        "orders of magnitude",
    ],
    "9": [
        "about 33 °C",
        "about 30 W",
        "20-26 %",
        "about 85 W",
        "95-99 %",
        "65-80 °C",
        "250-300 W",
        "5 points",
    ],
    "10": [
        "nohup",
        "disown",
        "python -u",
        "/tmp/gpu.pid",
        "tmux attach -t gpu",
        "/root",
        "PersistentVolumeClaim",
        "PID 1",
        "/proc/1/comm",
    ],
    "11": ["apps/v1", "kind: Deployment", '["sleep", "infinity"]', "qgpu-core: 20", "qgpu-schedule-policy"],
    "zombie": [
        "qgpu-core: 100",
        "kubelet_internal_checkpoint",
        "failed to allocate (100, 0, 1)",
        "PodUID",
        "metadata.uid",
        "systemctl restart kubelet",
        "docker restart",
        "10 to 30 seconds",
        "not killed",
        "kubectl cordon",
        "--force --grace-period=0",
        "cpu: '0'",
    ],
    "leak": [
        "30 of 200",
        "grep Terminating",
        "cards idle, no process",
        "processes running",
        "nothing allocated",
        "kubectl rollout restart daemonset",
        "rm -f",
        "kubernetes.io/hostname",
        "--grace-period=30",
        "3.0.2",
    ],
    "summary": ["<none>", "qgpu-schedule-policy", "NVML", "Util %", "±5", "as new as", "python -u"],
}


# ---------------------------------------------------------------------------------------------
# fixtures


def _no_detections(facts: object) -> Iterable[Outcome]:
    """A fixture check never runs: validation only reads its name, tables and codes."""
    return ()


#: throwaway checks the broken fixtures refer to (``fixture.*``); the demo diagnosis of _base
#: runs fixture.status and fixture.sched, whose codes every catalogue fixture therefore defines
FIXTURE_CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        Check(
            "fixture.status",
            reads=("pod",),
            emits=("POD_NOT_FOUND", "POD_RUNNING"),
            run=_no_detections,
            tables=("pod_status",),
        ),
        Check("fixture.sched", reads=("pod", "events"), emits=("POD_RUNNING",), run=_no_detections),
        Check("fixture.stray", reads=("pod",), emits=("POD_RUNING", "NODE_GONE"), run=_no_detections),
    )
}

#: catalogue codes no built-in check emits yet, kept for open issues; an entry must leave this
#: list in the change that adds its check (the test below fails on a stale entry)
RESERVED_CODES: frozenset[str] = frozenset()


@pytest.fixture(scope="module")
def mine(tmp_path_factory: pytest.TempPathFactory) -> RunbookSet:
    """The shipped catalogue and guides with the demo diagnosis, independent of other runbooks."""
    target = _base_dir(tmp_path_factory.mktemp("mine"))
    shutil.copy(RUNBOOKS / "findings.yaml", target / "findings.yaml")
    return load_runbooks(target, checks=FIXTURE_CHECKS)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RunbookSet:
    """The small _base catalogue (offers, roles, unless, docs) with the demo diagnosis."""
    return load_runbooks(_base_dir(tmp_path_factory.mktemp("base")), checks=FIXTURE_CHECKS)


def _base_dir(tmp_path: Path) -> Path:
    """A valid set: the small catalogue, the demo diagnosis and the shipped guides."""
    target = tmp_path / "rb"
    target.mkdir()
    shutil.copy(BROKEN / "_base" / "findings.yaml", target / "findings.yaml")
    shutil.copy(BROKEN / "_base" / "demo.yaml", target / "demo.yaml")
    for guide in RUNBOOKS.glob("guide-*.yaml"):
        shutil.copy(guide, target / guide.name)
    return target


def _guides(rs_dir: Path = RUNBOOKS) -> dict[str, dict[str, Any]]:
    import yaml

    out = {}
    for path in sorted(rs_dir.glob("guide-*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        out[data["name"]] = data
    return out


# ---------------------------------------------------------------------------------------------
# the shipped runbooks


def test_shipped_runbooks_validate_clean_against_the_builtin_checks() -> None:
    assert validate_dir(None) == []
    assert validate_dir(None, checks=builtin_checks()) == []
    rs = load_runbooks("")
    assert rs.directory == str(default_runbook_dir())
    assert default_runbook_dir() == RUNBOOKS
    assert rs.diagnoses and all(rb.checks for rb in rs.diagnoses.values())


def test_shipped_catalogue_and_guides_validate_with_a_fixture_diagnosis(tmp_path: Path) -> None:
    target = _base_dir(tmp_path)
    shutil.copy(RUNBOOKS / "findings.yaml", target / "findings.yaml")
    rs = load_runbooks(target, checks=FIXTURE_CHECKS)
    demo = rs.diagnosis("demo")
    assert list(demo.checks) == ["fixture.status", "fixture.sched"]
    assert demo.views == ["node_table"]
    assert demo.tables["pod_status"][1]["look_at"] == ["kubectl logs --previous"]
    assert len(rs.guides) >= 13


def test_builtin_check_codes_and_the_catalogue_match() -> None:
    """Every code a built-in check emits is worded, and every worded code is emitted (or reserved)."""
    rs = load_runbooks(RUNBOOKS)
    checks = builtin_checks()
    emitted = {code: name for name, check in checks.items() for code in check.emits}
    # what could not be read is reported by the engine itself, for every diagnosis
    emitted.update({code: "engine (unreadable reads)" for code in READ_CODES})
    unworded = sorted(f"{name}: {code}" for code, name in emitted.items() if code not in rs.catalogue)
    assert unworded == []
    unemitted = sorted(set(rs.catalogue) - set(emitted) - RESERVED_CODES)
    assert unemitted == [], "no built-in check emits these; write the check or reserve the code"
    assert sorted(RESERVED_CODES - set(rs.catalogue)) == [], "reserved codes must be in the catalogue"
    assert sorted(RESERVED_CODES & set(emitted)) == [], "a reserved code is emitted now; unreserve it"
    for name, check in checks.items():
        assert check.name == name and check.emits and check.reads, name
        assert len(set(check.emits)) == len(check.emits), name


def test_catalogue_words_every_public_code(mine: RunbookSet) -> None:
    rs = mine
    missing = [code for code in FINDINGS_MD_CODES if code not in rs.catalogue]
    assert missing == []
    for template in rs.catalogue.values():
        assert template.explanation.strip(), template.code
        assert template.line > 0 and template.source.endswith("findings.yaml")
        for offer in template.offers:
            assert offer.action in ACTION_NAMES, template.code
            assert ACTIONS[offer.action] <= set(offer.params), (template.code, offer.action)


def test_every_catalogue_text_fills_completely_from_the_declared_placeholders(mine: RunbookSet) -> None:
    rs = mine
    params: dict[str, object] = {name: f"<{name}>" for name in rs.placeholders}
    for code, template in rs.catalogue.items():
        finding = template.render(params)
        # every step, whatever its condition (the params above make each ``when`` true)
        steps = [render_template(step.text, params) for step in template.next_steps]
        texts = [finding.title, finding.explanation, *finding.next_steps, *steps]
        for text in texts:
            assert not re.search(r"\{[A-Za-z_]\w*\}", text), (code, text)
        assert "\n" not in finding.title and len(finding.title) <= 150, code


def test_every_shipped_offer_binds_from_the_declared_placeholders(mine: RunbookSet) -> None:
    """With its condition met, each offer yields one remediation with every template filled."""
    rs = mine
    params: dict[str, object] = {name: f"<{name}>" for name in rs.placeholders}
    for code, template in rs.catalogue.items():
        for offer in template.offers:
            scope = dict(params)
            if offer.when_not:
                scope[offer.when_not] = ""
            if offer.each:
                scope[offer.each] = [dict(params)]
            bound = offer.bind(scope)
            assert len(bound) == 1, (code, offer.action)
            texts = [bound[0].summary, *map(str, bound[0].params.values())]
            assert set(bound[0].params) == set(offer.params), (code, offer.action)
            for text in texts:
                assert text.strip() and not re.search(r"\{[A-Za-z_]\w*\}", text), (code, text)


# ---------------------------------------------------------------------------------------------
# field-notes coverage


def test_every_field_notes_section_is_covered_by_a_guide() -> None:
    covered: dict[str, list[str]] = {}
    for name, data in _guides().items():
        for entry in data.get("covers") or []:
            match = re.match(r"§(\S+)\s", str(entry))
            assert match, f"{name}: covers entry {entry!r} must start with a section id like '§4 '"
            covered.setdefault(match.group(1), []).append(name)
    assert sorted(covered) == sorted(FIELD_NOTES_SECTIONS)


@pytest.mark.parametrize("section", sorted(FIELD_NOTES_SECTIONS))
def test_covering_guide_states_the_sections_facts(section: str, mine: RunbookSet) -> None:
    rs = mine
    guides = [g for g in rs.guides.values() if any(c.startswith(f"§{section} ") for c in g.covers)]
    assert guides
    text = "\n".join(render_guide_text(g, width=400) for g in guides)
    missing = [fact for fact in FIELD_NOTES_SECTIONS[section] if fact not in text]
    assert missing == [], f"§{section}: not stated in {[g.name for g in guides]}"


# ---------------------------------------------------------------------------------------------
# broken fixtures


def _cases() -> list[Path]:
    return sorted(p for p in BROKEN.glob("*.yaml"))


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.stem)
def test_broken_fixture_reports_its_file_and_line(case: Path, tmp_path: Path) -> None:
    target = _base_dir(tmp_path)
    text = case.read_text(encoding="utf-8")
    expected_tail = [m.group(1) for m in re.finditer(r"^# expect: (.+)$", text, re.MULTILINE)]
    assert expected_tail, f"{case.name} has no '# expect:' lines"
    name = "findings.yaml" if re.search(r"^kind: findings$", text, re.MULTILINE) else case.name
    shutil.copy(case, target / name)
    expected = sorted(f"{target / name}:{tail.replace('DIR', str(target))}" for tail in expected_tail)
    problems = validate_dir(target, checks=FIXTURE_CHECKS)
    assert sorted(problems) == expected
    with pytest.raises(RunbookError) as caught:
        load_runbooks(target, checks=FIXTURE_CHECKS)
    assert sorted(caught.value.problems) == expected


def test_base_fixture_is_valid(tmp_path: Path) -> None:
    assert validate_dir(_base_dir(tmp_path), checks=FIXTURE_CHECKS) == []


def test_default_path_validates_against_builtin_checks(tmp_path: Path) -> None:
    """Without ``checks=``, names resolve against ``builtin_checks()``: fixture names are unknown."""
    target = _base_dir(tmp_path)
    demo = target / "demo.yaml"
    assert validate_dir(target) == [
        f"{demo}:7: unknown check 'fixture.status'",
        f"{demo}:7: unknown check 'fixture.sched'",
    ]
    assert validate_dir(target, checks=builtin_checks()) == validate_dir(target)
    # the same runbook naming built-in checks (and the table pod.status reads) is valid
    demo.write_text(
        demo.read_text(encoding="utf-8").replace("fixture.status, fixture.sched", "pod.status, pod.running")
    )
    shutil.copy(RUNBOOKS / "findings.yaml", target / "findings.yaml")
    assert validate_dir(target) == []


def test_missing_directory_and_missing_catalogue(tmp_path: Path) -> None:
    assert validate_dir(tmp_path / "nope", checks=FIXTURE_CHECKS) == [
        f"{tmp_path / 'nope'}: runbook directory not found"
    ]
    target = _base_dir(tmp_path)
    (target / "findings.yaml").unlink()
    problems = validate_dir(target, checks=FIXTURE_CHECKS)
    assert problems == [f"{target}: no findings catalogue (a file with 'kind: findings', e.g. findings.yaml)"]


def test_second_catalogue_and_duplicate_guide_name(tmp_path: Path) -> None:
    target = _base_dir(tmp_path)
    shutil.copy(target / "findings.yaml", target / "more-findings.yaml")
    shutil.copy(target / "guide-pod-triage.yaml", target / "guide-pod-triage-copy.yaml")
    problems = validate_dir(target, checks=FIXTURE_CHECKS)
    second, first = target / "more-findings.yaml", target / "findings.yaml"
    assert f"{second}:4: a second findings catalogue; the first is {first}" in problems
    assert any(
        p.startswith(f"{target / 'guide-pod-triage.yaml'}:2: runbook name 'guide-pod-triage' is already used by")
        for p in problems
    )
    assert len(problems) == 2


def test_dot_files_and_other_suffixes_are_ignored(tmp_path: Path) -> None:
    target = _base_dir(tmp_path)
    (target / ".hidden.yaml").write_text("not: [valid", encoding="utf-8")
    (target / "notes.txt").write_text("kind: nonsense", encoding="utf-8")
    assert validate_dir(target, checks=FIXTURE_CHECKS) == []


def test_non_utf8_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    target = _base_dir(tmp_path)
    (target / "bad.yaml").write_bytes(b"kind: guidance\nname: \xff\xfe\n")
    problems = validate_dir(target, checks=FIXTURE_CHECKS)
    assert len(problems) == 1 and problems[0].startswith(f"{target / 'bad.yaml'}:1: not UTF-8 text")


# ---------------------------------------------------------------------------------------------
# yaml_marks


def test_marks_record_key_and_item_lines() -> None:
    parsed = parse_yaml("a: 1\nb:\n  - x\n  - y: 2\n    z: 3\n")
    assert parsed.value == {"a": 1, "b": ["x", {"y": 2, "z": 3}]}
    assert parsed.line(("b", 1, "z")) == 5
    assert parsed.line(("b", 0)) == 3
    assert parsed.line(("b", 7, "missing")) == 2


def test_marks_report_duplicates_and_keep_the_first() -> None:
    parsed = parse_yaml("m:\n  k: 1\n  j: 0\n  k: 2\n")
    assert parsed.value == {"m": {"k": 1, "j": 0}}
    assert [(d.path, d.key, d.line, d.first_line) for d in parsed.duplicates] == [(("m",), "k", 4, 2)]


def test_marks_syntax_error_line() -> None:
    with pytest.raises(YamlSyntaxError) as caught:
        parse_yaml("a: 1\nb: [1, 2\nc: 3\n")
    assert caught.value.line == 3


def test_marks_refuse_recursion_and_alias_bombs() -> None:
    recursive = parse_yaml("a: &x [1, *x]\n")
    assert any("recursive alias" in p for _, p in recursive.problems)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True)
    )
    parsed = parse_yaml(bomb)
    # the alias budget (MAX_ALIAS_NODES) stops it long before the document budget (MAX_NODES)
    assert any(f"aliases expand to more than {MAX_ALIAS_NODES} nodes" in p for _, p in parsed.problems)
    big = parse_yaml("[" + ", ".join(["[1, 2, 3]"] * (MAX_NODES // 4 + 1)) + "]")
    assert any(f"more than {MAX_NODES} nodes" in p for _, p in big.problems)


def test_marks_refuse_merge_keys_and_unknown_tags() -> None:
    parsed = parse_yaml("base: &b {x: 1}\nuse:\n  <<: *b\n  y: !custom 2\n")
    problems = [p for _, p in parsed.problems]
    assert any("merge keys" in p for p in problems)
    assert any("unsupported tag '!custom'" in p for p in problems)
    assert parsed.value == {"base": {"x": 1}, "use": {"<<": {"x": 1}, "y": None}}


def test_marks_are_the_same_whichever_loader_composes(monkeypatch: pytest.MonkeyPatch) -> None:
    """libyaml composes the shipped runbooks to the very values, lines and duplicates Python does."""
    import yaml

    from bot.yamlio import marks as yaml_marks

    texts = [f.read_text(encoding="utf-8") for f in sorted(RUNBOOKS.glob("*.yaml"))]
    texts.append("m:\n  k: 1\n  j: &a [1, 2]\n  k: *a\n  t: !custom 2\n")
    fast = [parse_yaml(t) for t in texts]
    monkeypatch.setattr(yaml_marks, "SAFE_LOADER", yaml.SafeLoader)
    for text, parsed in zip(texts, fast, strict=True):
        slow = parse_yaml(text)
        assert (parsed.value, parsed.lines, parsed.duplicates, parsed.problems) == (
            slow.value,
            slow.lines,
            slow.duplicates,
            slow.problems,
        )


# ---------------------------------------------------------------------------------------------
# templates


def test_render_template_plain_fields_and_escapes() -> None:
    assert render_template("{pod} on {node}", {"pod": "ns/p", "node": "n1"}) == "ns/p on n1"
    assert render_template("{{literal}} {missing}", {}) == "{literal} {missing}"
    assert render_template("{uids}", {"uids": ["a", "b"]}) == "a, b"
    assert render_template("{pod.__class__} {pod[0]} {pod!r} {pod:>20} {0}", {"pod": "x"}) == (
        "{pod.__class__} {pod[0]} {pod!r} {pod:>20} {0}"
    )


def test_render_title_is_one_clipped_line() -> None:
    title = render_title("{message}", {"message": "line one\nline two " + "x" * 400})
    assert "\n" not in title and len(title) == 150 and title.endswith("…")


class _Hostile:
    def __str__(self) -> str:
        raise RuntimeError("boom")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("format must not be called")


_values = st.one_of(
    st.text(max_size=50),
    st.integers(),
    st.floats(allow_nan=True),
    st.none(),
    st.lists(st.text(max_size=10), max_size=5),
    st.just(_Hostile()),
)


@settings(max_examples=300, deadline=None)
@given(
    template=st.text(alphabet=st.sampled_from(list("{}[]!:.0ab_ \\x%s")), max_size=60) | st.text(max_size=60),
    params=st.dictionaries(
        st.sampled_from(["a", "b", "ab", "x_", "0", "a.b"]) | st.text(max_size=5), _values, max_size=6
    ),
)
def test_render_template_never_raises(template: str, params: dict[str, object]) -> None:
    out = render_template(template, params)
    assert isinstance(out, str)
    assert isinstance(render_title(template, params), str)
    assert isinstance(placeholder_problems(template), list)


@settings(max_examples=200, deadline=None)
@given(name=st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True), value=st.text(max_size=30))
def test_render_template_fills_valid_names(name: str, value: str) -> None:
    assert render_template("<{" + name + "}>", {name: value}) == f"<{value}>"
    assert placeholder_problems("<{" + name + "}>") == []


# ---------------------------------------------------------------------------------------------
# findings and guides


_HOLDERS = [
    {"namespace": "a", "name": "p1", "ref": "a/p1"},
    {"namespace": "b", "name": "p2", "ref": "b/p2"},
]


def test_offers_bind_their_params_from_the_finding(base: RunbookSet) -> None:
    template = base.template("POD_HOLDS_GPU")
    finding = template.render(
        {"node": "n1", "count": 2, "holders": _HOLDERS, "cordoned": False}, evidence=["gpu 0: p1"]
    )
    assert [(r.action, r.params) for r in finding.remediations] == [
        ("pod.delete", {"namespace": "a", "pod": "p1"}),
        ("pod.delete", {"namespace": "b", "pod": "p2"}),
        ("node.cordon", {"node": "n1"}),
        ("kubelet.restart", {"node": "n1"}),
    ]
    assert [r.summary for r in finding.remediations[:2]] == ["Delete a/p1 gracefully", "Delete b/p2 gracefully"]
    assert finding.title == "2 pod(s) hold GPUs on n1"
    assert finding.evidence == ["gpu 0: p1"]


def test_offer_when_and_when_not_follow_the_named_parameter(base: RunbookSet) -> None:
    template = base.template("POD_HOLDS_GPU")
    cordoned = [r.action for r in template.render({"node": "n1", "cordoned": True}).remediations]
    assert cordoned == ["node.uncordon", "kubelet.restart"]
    unset = [r.action for r in template.render({"node": "n1"}).remediations]
    assert unset == ["node.cordon", "kubelet.restart"]  # a missing parameter is falsy
    falsy_values: list[object] = ["", 0, [], None]
    for falsy in falsy_values:
        assert "node.cordon" in [r.action for r in template.render({"node": "n1", "cordoned": falsy}).remediations]


def test_offer_each_needs_a_list_of_mappings(base: RunbookSet) -> None:
    template = base.template("POD_HOLDS_GPU")
    not_lists: list[object] = ["a/p1", {"namespace": "a", "name": "p1"}, None, []]
    for holders in not_lists:
        actions = [r.action for r in template.render({"node": "n1", "holders": holders}).remediations]
        assert "pod.delete" not in actions, holders
    mixed = [*_HOLDERS[:1], "b/p2", 7]
    bound = template.render({"node": "n1", "holders": mixed}).remediations
    assert [r.params for r in bound if r.action == "pod.delete"] == [{"namespace": "a", "pod": "p1"}]


def test_offer_with_an_unbound_parameter_is_dropped(base: RunbookSet) -> None:
    template = base.template("POD_HOLDS_GPU")
    # no node: every node offer would be a button that can never run
    holders = [{"namespace": "a", "name": "p1", "ref": "a/p1"}, {"namespace": "b", "ref": "b/?"}]
    finding = template.render({"holders": holders})
    assert [(r.action, r.params) for r in finding.remediations] == [("pod.delete", {"namespace": "a", "pod": "p1"})]
    # an empty value binds nothing either
    assert template.render({"node": ""}).remediations == []
    # an item's keys fill the templates before the finding's: the finding's namespace only fills gaps
    items = [{"name": "p3", "ref": "c/p3"}]
    finding = template.render({"node": "n1", "namespace": "c", "holders": items, "cordoned": True})
    assert finding.remediations[0].params == {"namespace": "c", "pod": "p3"}


def test_roles_set_severity_and_rank(base: RunbookSet) -> None:
    template = base.template("POD_HOLDS_GPU")
    plain = template.render({"node": "n1"})
    assert (plain.severity, plain.rank) == ("warning", 40)
    cause = template.render({"node": "n1"}, role="cause")
    assert (cause.severity, cause.rank) == ("critical", 16)
    bystander = template.render({"node": "n1"}, role="bystander")
    assert (bystander.severity, bystander.rank) == ("warning", 80)  # severity falls back to the finding's
    unknown = template.render({"node": "n1"}, role="nobody")
    assert (unknown.severity, unknown.rank) == ("warning", 40)


def test_unless_suppresses_by_code_and_prefix(base: RunbookSet) -> None:
    template = base.template("SCHED_STUCK")
    assert template.unless == ("POD_NOT_FOUND", "SCHED_*")
    assert template.suppressed_by({"POD_NOT_FOUND"})
    assert template.suppressed_by({"POD_RUNNING", "SCHED_OTHER"})
    assert not template.suppressed_by({"SCHED_STUCK"})  # a prefix never matches the finding itself
    assert not template.suppressed_by({"POD_RUNNING", "POD_NOT_FOUND_X"})
    assert not template.suppressed_by(set())
    assert not base.template("POD_RUNNING").suppressed_by({"POD_NOT_FOUND", "SCHED_STUCK"})


def test_docs_becomes_the_last_next_step(base: RunbookSet) -> None:
    finding = base.template("POD_RUNNING").render({"pod": "ns/p", "node": "n1", "gpubot": "@gpubot"})
    assert finding.next_steps == ["Background: @gpubot runbook guide-pod-triage"]
    assert DOCS_STEP == "Background: {gpubot} runbook {docs}"
    assert base.template("POD_NOT_FOUND").render({"namespace": "ns"}).next_steps == [
        "Check the name and the namespace ns."
    ]


def test_shipped_checkpoint_zombie_offers_the_kubelet_fixes(mine: RunbookSet) -> None:
    template = mine.template("CHECKPOINT_ZOMBIE")
    params = {"node": "n1", "count": 1, "uids": ["u1"], "devices": "GPU-1"}
    finding = template.render(params, evidence=["checkpoint entry u1"])
    assert [(r.action, r.params) for r in finding.remediations] == [
        ("kubelet.restart", {"node": "n1"}),
        ("checkpoint.clear", {"node": "n1"}),
    ]
    assert "n1" in finding.title and finding.severity == "critical"
    assert finding.evidence == ["checkpoint entry u1"]
    assert finding.next_steps[-1].endswith("runbook guide-checkpoint-zombie")
    with_qgpu = template.render({**params, "qgpu": True}).remediations
    assert [r.action for r in with_qgpu][0] == "qgpu.restart-manager"


def test_shipped_terminating_holders_cause_role_and_no_events_unless(mine: RunbookSet) -> None:
    holds = mine.template("TERMINATING_HOLDS_GPU")
    assert (holds.render({}, role="cause").severity, holds.render({}).severity) == ("critical", "warning")
    silence = mine.template("SCHED_NO_EVENTS")
    assert silence.suppressed_by({"SCHED_INSUFFICIENT_GPU"}) and silence.suppressed_by({"SPEC_QGPU_INVALID"})
    assert not silence.suppressed_by({"SCHED_NO_EVENTS", "POD_RUNNING"})


def test_guide_lookup_suggests_close_names(mine: RunbookSet) -> None:
    rs = mine
    with pytest.raises(UsageError, match="did you mean guide-pod-triage"):
        rs.guide("guide-pod-triag")
    names = [name for name, _ in list_guides(rs)]
    assert names == sorted(names) and "guide-nvml-unknown-error" in names


@pytest.mark.parametrize("width", [60, 100])
def test_guide_text_wraps_prose_and_aligns_tables(width: int, mine: RunbookSet) -> None:
    rs = mine
    for rb in rs.guides.values():
        text = render_guide_text(rb, width=width)
        assert text.split("\n=")[0].replace("\n", " ") == rb.title
        for line in text.splitlines():
            if not line.startswith("    "):  # examples are shown verbatim
                assert len(line) <= width or " " not in line.strip(), (rb.name, line)
    table_text = render_guide_text(rs.guide("guide-gpu-really-working"), width=width)
    rule = next(line for line in table_text.splitlines() if line.startswith("  --"))
    header = table_text.splitlines()[table_text.splitlines().index(rule) - 1]
    starts = [m.start() for m in re.finditer(r"-+", rule)]
    assert [header[i - 1] if i else " " for i in starts] == [" "] * len(starts)


def test_a_family_pattern_selects_every_check_of_the_family(tmp_path: Path) -> None:
    """A new check joins every runbook that lists its family (``fixture.*``) without editing it."""
    target = _base_dir(tmp_path)
    demo = target / "demo.yaml"
    text = demo.read_text(encoding="utf-8")
    original = "checks: [fixture.status, fixture.sched]"
    assert original in text
    demo.write_text(text.replace(original, "checks: [fixture.*]"), encoding="utf-8")
    extra = dict(FIXTURE_CHECKS)
    extra["fixture.new"] = Check("fixture.new", ("pod",), ("POD_RUNNING",), lambda facts: iter(()))
    rs = load_runbooks(target, checks={k: v for k, v in extra.items() if k != "fixture.stray"})
    assert set(rs.diagnosis("demo").checks) == {"fixture.status", "fixture.sched", "fixture.new"}
    demo.write_text(text.replace(original, "checks: [nothing.*]"), encoding="utf-8")
    problems = validate_dir(target, checks=extra)
    assert any("pattern 'nothing.*' matches no check" in p for p in problems), problems


def test_the_xid_table_is_the_same_in_both_diagnoses() -> None:
    """node-status and why-pending word the same Xid the same way; the catch-all row is there."""
    shipped = load_runbooks(RUNBOOKS)
    pending, status = shipped.diagnosis("why-pending").tables, shipped.diagnosis("node-status").tables
    assert pending["xid_codes"] == status["xid_codes"]
    rows = {str(r["xid"]): r for r in status["xid_codes"]}
    assert {"13", "31", "43", "45", "48", "61", "62", "63", "64", "74", "79", "92", "94", "95", "119", "120",
            "other"} <= set(rows)
    assert {r["class"] for r in rows.values()} <= {"lost", "reset", "watch", "app"}
    assert all(r.get("name") and r.get("meaning") and r.get("action") for r in rows.values())
    causes = {r["cause"] for r in pending["admission_causes"]}
    assert causes == {"lost", "stale", "full", "plugin", "unregistered", "topology", "other"}


def test_a_step_follows_its_condition_as_an_offer_does(mine: RunbookSet) -> None:
    template = mine.template("NODE_UNREACHABLE")
    base = {"node": "n1", "reason": "refused", "via": "SSH"}
    over_ssh = template.render({**base, "over_ssh": True}).next_steps
    assert "SSH key" in over_ssh[0] and not any("pods/exec" in s for s in over_ssh)
    through_agent = template.render({**base, "over_ssh": False}).next_steps
    assert "pods/exec" in through_agent[0] and not any("known_hosts" in s for s in through_agent)
    assert through_agent[-1].startswith("Background:"), "the guide stays the last step"
