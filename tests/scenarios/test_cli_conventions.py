"""What kubectl and k8sgpt users type by habit, and what a new user gets wrong, each answered with
a helpful line: did-you-mean, -o, -A, --kubeconfig, completion, exit statuses, kubeconfig errors.

Everything runs the real ``bot.cli.main`` in process (or the real process where the shell or the
terminal matters) against real files and the simulator.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from bot.exit_codes import ExitCode
from bot.synth.generate import TARGET_NAMESPACE, TARGET_POD
from tests.faults.read_rig import refused_url

ROOT = Path(__file__).resolve().parents[2]
ZOMBIE = str(ROOT / "scenarios" / "zombie-checkpoint.yaml")
HEALTHY = str(ROOT / "scenarios" / "tce-qgpu-healthy.yaml")
ZOMBIE_POD = ["why-pending", "gpu-full-5d8c6-q7wz2", "-n", "ai"]


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["why-pendng", "p"], "unknown command 'why-pendng'; did you mean why-pending?"),
        (["node-stauts"], "did you mean node-status?"),
        (["why-pending", "p", "--namespce", "ai"], "unrecognized arguments: --namespce ai; did you mean --namespace?"),
        (["why-pending", "p", "--kubeconfg=x"], "did you mean --kubeconfig?"),
        (["runbook", "checkpoint-zombie"], "runbook 'checkpoint-zombie'; did you mean guide-checkpoint-zombie?"),
        (["runbooks", "validat"], "did you mean validate?"),
        (["why-pending", "p", "-o", "jsn"], "-o jsn: use text, json, yaml or wide; did you mean json?"),
        (["completion", "fsh"], "use bash, zsh or fish; did you mean fish?"),
        (["--verbos", "help"], "unrecognized arguments: --verbos; did you mean --verbose?"),
    ],
)
def test_a_typo_gets_the_word_that_was_meant(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == ExitCode.USAGE
    assert said in _err(capsys)


def test_slack_typos_get_the_same_suggestions() -> None:
    from bot.commands import parse_invocation
    from bot.errors import UsageError

    with pytest.raises(UsageError, match="did you mean why-pending"):
        parse_invocation(["why-pendng", "p"], surface="slack")
    with pytest.raises(UsageError, match="did you mean --namespace"):
        parse_invocation(["why-pending", "p", "--namespac", "ai"], surface="slack")


def test_output_formats_and_the_json_alias(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ZOMBIE_POD, "--scenario", ZOMBIE, "-o", "json"]) == ExitCode.FINDINGS
    as_o = json.loads(capsys.readouterr().out)
    assert main([*ZOMBIE_POD, "--scenario", ZOMBIE, "--json"]) == ExitCode.FINDINGS
    as_flag = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in as_o["findings"]] == [f["code"] for f in as_flag["findings"]]
    # JSON keeps one finding per object; consequences say what explains them (additive field)
    explained = {f["code"]: f.get("explained_by") for f in as_o["findings"]}
    assert explained["LEAK_LOGICAL_NOT_PHYSICAL"] == explained["SCHED_QGPU_ALLOC_FAILED"] == "CHECKPOINT_ZOMBIE"
    assert "explained_by" not in next(f for f in as_o["findings"] if f["code"] == "CHECKPOINT_ZOMBIE")
    assert main([*ZOMBIE_POD, "--scenario", ZOMBIE, "-o", "yaml"]) == ExitCode.FINDINGS
    assert [f["code"] for f in yaml.safe_load(capsys.readouterr().out)["findings"]] == [
        f["code"] for f in as_o["findings"]
    ]
    assert main([*ZOMBIE_POD, "--scenario", ZOMBIE, "-o", "wide"]) == ExitCode.FINDINGS
    wide = capsys.readouterr().out
    assert "Root cause:" in wide and max(len(line) for line in wide.splitlines()) > 100  # nothing wrapped
    assert main([*ZOMBIE_POD, "--scenario", ZOMBIE, "--json", "-o", "text"]) == ExitCode.USAGE
    assert "disagree" in _err(capsys)


def test_a_fleet_wide_node_status_reads_root_cause_first_and_counts_what_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a generated mixed fleet (qGPU and NVIDIA nodes, zombie checkpoints on both kinds, most
    cards busy) the text opens on the verdict, whose fix covers both kinds of node, and a note
    found on most nodes shows its first nodes and counts the rest; ``-o wide`` lists every line,
    as many as the JSON holds."""
    fleet = tmp_path / "fleet.yaml"
    spec = "nodes=24,gpu_nodes=16,pods=200,seed=1,realistic=1"
    assert main(["sim", "--generate", spec, "--write", str(fleet)]) == ExitCode.OK
    capsys.readouterr()
    assert main(["node-status", "--scenario", str(fleet)]) == ExitCode.FINDINGS
    text = capsys.readouterr().out
    assert text.index("Root cause:") < text.index("\nnode ") < text.index("\n1. [CRITICAL] CHECKPOINT_ZOMBIE")
    verdict = " ".join(text[text.index("Root cause:"):text.index("Found:")].split())
    assert "fix: Restart qgpu-manager on " in verdict and "; Restart kubelet on " in verdict, verdict
    counted = [ln for ln in text.splitlines() if ln.strip().startswith("| … ")]
    assert counted and all(ln.endswith("-o wide shows every one") for ln in counted)
    assert main(["node-status", "--scenario", str(fleet), "-o", "wide"]) == ExitCode.FINDINGS
    wide = capsys.readouterr().out
    assert "-o wide shows every one" not in wide
    assert main(["node-status", "--scenario", str(fleet), "--json"]) == ExitCode.FINDINGS
    findings = json.loads(capsys.readouterr().out)["findings"]
    evidence = sum(len(line.splitlines() or [""]) for f in findings for line in f["evidence"])
    assert sum(1 for ln in wide.splitlines() if ln.strip().startswith("| ")) == evidence
    assert sum(1 for ln in text.splitlines() if ln.strip().startswith("| ")) < evidence / 2


def test_on_a_generated_fleet_the_pending_pods_cause_is_the_holder_that_blocks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The generated fleet's 8-GPU pod waits because every NVIDIA node is fully requested; two
    nodes are full only by Terminating pods (8 cards each), two others hold zombie checkpoint
    entries beside running pods that request every card. The answer is the Terminating holders
    (their release gives the pod a node), not the zombies (the scheduler never counted those),
    and the Terminating pods' idle cards are not called a leak."""
    fleet = tmp_path / "fleet.yaml"
    assert main(["sim", "--generate", "nodes=24,gpu_nodes=16,pods=200,seed=1,realistic=1", "--write", str(fleet)]) == 0
    capsys.readouterr()
    argv = ["why-pending", TARGET_POD, "-n", TARGET_NAMESPACE, "--scenario", str(fleet), "--json"]
    assert main(argv) == ExitCode.FINDINGS
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert findings[0]["code"] == "TERMINATING_HOLDS_GPU" and findings[0]["severity"] == "critical"
    for code in ("SCHED_INSUFFICIENT_GPU", "CAPACITY_EXHAUSTED"):  # the demand is not genuine
        assert next(f for f in findings if f["code"] == code)["explained_by"] == "TERMINATING_HOLDS_GPU"
    assert "CHECKPOINT_ZOMBIE" in {f["code"] for f in findings}
    assert main(["node-status", "--scenario", str(fleet), "--json"]) == ExitCode.FINDINGS
    report = json.loads(capsys.readouterr().out)
    terminating_only = {row["node"] for row in report["nodes"]
                        if row["pods"] and all("[Terminating]" in line for line in row["pods"])}
    assert terminating_only
    leaks = {f["subject"].removeprefix("node/") for f in report["findings"] if f["code"] == "LEAK_LOGICAL_NOT_PHYSICAL"}
    assert not leaks & terminating_only


def test_all_namespaces_where_it_means_something(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why-pending", "p", "-A"]) == ExitCode.USAGE
    assert "-A: why-pending diagnoses one pod or workload, so it needs its namespace: -n NAMESPACE" in _err(capsys)
    # nodes have no namespace: node-status takes -A as kubectl get nodes does, and answers
    assert main(["node-status", "-A", "--scenario", ZOMBIE, "--json"]) == ExitCode.FINDINGS
    assert json.loads(capsys.readouterr().out)["command"] == "node-status"


def test_exit_status_says_whether_a_problem_was_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ZOMBIE_POD, "--scenario", ZOMBIE]) == ExitCode.FINDINGS
    text = capsys.readouterr().out
    assert "Found: 1 cause, 2 consequences." in text
    assert main(["why-pending", "gpu-demo-6c9f7d-tx2lq", "-n", "ai", "--scenario", HEALTHY]) == ExitCode.OK
    assert "POD_RUNNING" in capsys.readouterr().out  # an info finding is no problem
    assert main(["runbook"]) == ExitCode.OK


def _kubeconfig(path: Path, contexts: list[str], current: str = "") -> Path:
    data = {
        "apiVersion": "v1",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in contexts],
    }
    if current:
        data["current-context"] = current
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_missing_kubeconfig_names_the_paths_and_what_to_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["why-pending", "p"]) == ExitCode.CONFIG
    err = _err(capsys)
    assert "no kubeconfig: tried ~/.kube/config (no such file)" in err
    assert "--kubeconfig PATH" in err and "--context NAME" in err and "--scenario scenarios/" in err
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/a{os.pathsep}{tmp_path}/b")
    assert main(["node-status"]) == ExitCode.CONFIG
    assert f"tried {tmp_path}/a and {tmp_path}/b ($KUBECONFIG)" in _err(capsys)
    assert main(["why-pending", "p", "--kubeconfig", str(tmp_path / "none.yaml")]) == ExitCode.CONFIG
    assert f"--kubeconfig {tmp_path / 'none.yaml'}: no such file" in _err(capsys)


def test_a_broken_kubeconfig_names_the_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "config"
    broken.write_text("apiVersion: v1\nclusters:\n- name: x\n  cluster: {server: [}\n")
    assert main(["why-pending", "p", "--kubeconfig", str(broken)]) == ExitCode.CONFIG
    err = _err(capsys)
    # the file, the line and what is wrong with it (the strict loader reads it before the client does)
    assert f"kubeconfig {broken}" in err and "line 4" in err and "not valid YAML" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error" not in err


def test_an_unknown_context_lists_the_contexts_and_the_closest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _kubeconfig(tmp_path / "config", ["prod-gpu", "staging"], current="staging")
    assert main(["why-pending", "p", "--kubeconfig", str(config), "--context", "prod-gpo"]) == ExitCode.CONFIG
    err = _err(capsys)
    assert f"context 'prod-gpo' is not in {config}; did you mean prod-gpu? (contexts: prod-gpu, staging)" in err
    assert "not-a-real-token" not in err
    no_current = _kubeconfig(tmp_path / "other", ["a", "b"])
    assert main(["node-status", "--kubeconfig", str(no_current)]) == ExitCode.CONFIG
    assert "sets no current-context: pick one with --context NAME (contexts: a, b)" in _err(capsys)


def test_serve_without_network_names_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "config", ["a"], current="a")))
    monkeypatch.setenv("GPUBOT_SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("GPUBOT_SLACK_APP_TOKEN", "xapp-test")
    monkeypatch.setenv("GPUBOT_SLACK_API_URL", "https://gpubot-test.invalid/api/")  # .invalid never resolves
    monkeypatch.setenv("GPUBOT_STATE_PATH", str(tmp_path / "state.db"))
    assert main(["serve"]) == ExitCode.CONFIG
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("gpubot: cannot reach gpubot-test.invalid: its name does not resolve"), err
    assert "internal error" not in err and "xoxb" not in err


# -- completion ------------------------------------------------------------------------------------


def _complete(*words: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["__complete", *words]) == 0
    return capsys.readouterr().out.split()


def test_completion_comes_from_the_command_table_and_the_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert _complete("why-p", capsys=capsys) == ["why-pending"]
    assert "completion" in _complete("", capsys=capsys)
    assert _complete("why-pending", "-o", "", capsys=capsys) == ["text", "json", "yaml", "wide"]
    assert "--namespace" in _complete("why-pending", "--n", capsys=capsys)
    assert _complete("why-pending", "--scenario", "", capsys=capsys) == ["__files__"]
    assert _complete("runbook", "guide-lea", capsys=capsys) == ["guide-leak-triage"]
    assert _complete("why-pending", "--scenario", ZOMBIE, "-n", "ai", "gpu-f", capsys=capsys) == [
        "gpu-full-5d8c6-q7wz2"
    ]
    assert _complete("node-status", "--scenario", ZOMBIE, "", capsys=capsys) == ["tcs-10-29-25-5", "tcs-10-29-25-6"]
    # help never lists the hidden helper
    assert main(["help"]) == 0
    assert "__complete" not in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_script_completes_in_a_real_bash(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "gpubot").exists()
    script = (
        "source <(gpubot completion bash)\n"
        f"COMP_WORDS=(gpubot why-pending --scenario {ZOMBIE} -n ai gpu-); COMP_CWORD=6; _gpubot\n"
        'echo "${COMPREPLY[@]}"\n'
        "COMP_WORDS=(gpubot node-st); COMP_CWORD=1; _gpubot\n"
        'echo "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["gpu-full-5d8c6-q7wz2", "node-status"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_ask_the_same_helper(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    assert "gpubot __complete" in out and "__files__" in out
    if shell == "fish":  # each command with its summary from the table
        assert "-a why-pending -d 'why a GPU pod or workload does not run" in out


async def test_completion_reads_names_from_a_live_cluster(tmp_path: Path) -> None:
    """Without --scenario the names come from the cluster (one list call, a short timeout); a
    cluster that is not there offers nothing, quickly."""
    from bot.sim.cluster import SimCluster

    async with SimCluster.from_file(ZOMBIE, workdir=tmp_path / "sim") as sim:
        kubeconfig = str(sim.kubeconfig_path)
        argv = [sys.executable, "-m", "bot.cli", "__complete", "--kubeconfig", kubeconfig]
        pods = await _run([*argv[:4], "why-pending", *argv[4:], "-n", "ai", ""])
        nodes = await _run([*argv[:4], "node-status", *argv[4:], "tcs-10-29-25-"])
        namespaces = await _run([*argv[:4], "why-pending", *argv[4:], "-n", ""])
    assert "gpu-full-5d8c6-q7wz2" in pods
    assert nodes == ["tcs-10-29-25-5", "tcs-10-29-25-6"]
    assert "ai" in namespaces
    # the same kubeconfig aimed at a port nothing listens on (kept bound: the stopped simulator's
    # own port could be taken by another worker's simulator of the same scenario, which answered)
    stopped = tmp_path / "stopped-kubeconfig"
    config = Path(kubeconfig).read_text()
    assert sim.api.url in config
    stopped.write_text(config.replace(sim.api.url, refused_url()))
    gone = await _run([*argv[:4], "node-status", "--kubeconfig", str(stopped), ""])
    assert gone == []


async def _run(argv: list[str]) -> list[str]:
    """A real process, so the simulator's event loop keeps serving while it runs."""
    import asyncio

    proc = await asyncio.create_subprocess_exec(*argv, cwd=ROOT, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0 and not err, err
    return out.decode().split()
