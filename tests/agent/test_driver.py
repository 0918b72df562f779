"""The agent's nvidia-smi from a host driver directory: found on PATH first, then in each
configured root in order, run with a fixed argv and that root's lib on LD_LIBRARY_PATH.

The "driver" here is a stand-in executable (a shell script that prints its argv and
LD_LIBRARY_PATH), since no NVIDIA driver is installed where the tests run; what is tested is the
finding, the environment and the argv, which are the agent's own.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.agent import driver
from bot.probes.nvidia_smi import GPU_QUERY

_FAKE = '#!/bin/sh\necho "argv: $*"\necho "lib: $LD_LIBRARY_PATH"\nexit 0\n'


def _root(base: Path, name: str, bin_dir: str, lib: str, *, with_smi: bool = True) -> dict[str, str]:
    mount = base / name
    (mount / bin_dir).mkdir(parents=True)
    (mount / lib).mkdir(parents=True)
    if with_smi:
        smi = mount / bin_dir / "nvidia-smi"
        smi.write_text(_FAKE)
        smi.chmod(0o755)
    return {"mount": str(mount), "host": f"/host/{name}", "bin": bin_dir, "lib": lib}


@pytest.fixture
def no_smi_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    # sh and echo still resolve (the stand-in is a shell script); nvidia-smi does not
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    return tmp_path


def test_the_first_root_that_has_nvidia_smi_runs_it_with_its_lib(no_smi_on_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    roots = [_root(no_smi_on_path, "cos", "bin", "lib64", with_smi=False),
             _root(no_smi_on_path, "operator", "usr/bin", "usr/lib64")]
    monkeypatch.setenv(driver.ENV, json.dumps(roots))
    out, err = io.StringIO(), io.StringIO()
    assert driver.run("where", out, err) == 0
    assert out.getvalue() == "host /host/operator (usr/bin/nvidia-smi, usr/lib64)\n"
    out = io.StringIO()
    assert driver.run("gpu", out, err) == 0
    argv, lib = out.getvalue().splitlines()
    assert argv == "argv: " + GPU_QUERY.removeprefix("nvidia-smi ")
    assert lib == f"lib: {no_smi_on_path}/operator/usr/lib64"


def test_nowhere_is_127_naming_where_it_looked(no_smi_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver.ENV, json.dumps([_root(no_smi_on_path, "cos", "bin", "lib64", with_smi=False)]))
    out, err = io.StringIO(), io.StringIO()
    assert driver.run("ecc", out, err) == driver.NOT_FOUND
    assert err.getvalue() == "nvidia-smi: command not found (looked on PATH, /host/cos/bin)\n"
    assert driver.run("where", out, io.StringIO()) == driver.NOT_FOUND and out.getvalue() == ""


def test_an_unknown_read_or_a_malformed_setting_runs_nothing(no_smi_on_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    assert driver.run("--help; rm -rf /", io.StringIO(), err) == 2
    assert err.getvalue().startswith("unknown nvidia-smi read")
    assert driver.roots_from_env("not json") == [] and driver.roots_from_env('[{"mount": "relative"}]') == []
    monkeypatch.setenv(driver.ENV, "{")
    assert driver.run("where", io.StringIO(), io.StringIO()) == driver.NOT_FOUND


def test_on_path_wins(no_smi_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = _root(no_smi_on_path, "runtime", "bin", "lib")
    monkeypatch.setenv("PATH", f"{runtime['mount']}/bin:/usr/bin:/bin")
    monkeypatch.setenv(driver.ENV, json.dumps([_root(no_smi_on_path, "operator", "usr/bin", "usr/lib64")]))
    out = io.StringIO()
    assert driver.run("where", out, io.StringIO()) == 0
    assert out.getvalue() == f"PATH {runtime['mount']}/bin/nvidia-smi\n"


def test_the_agent_says_at_start_up_what_this_node_offers(no_smi_on_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from bot.agent.__main__ import main
    from bot.agent.kernel_log import ENV as LOG_ENV

    monkeypatch.setenv(driver.ENV, json.dumps([_root(no_smi_on_path, "cos", "bin", "lib64")]))
    monkeypatch.setenv(LOG_ENV, f"journal={no_smi_on_path}/nojournal")
    assert main(["startup"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "gpubot-node: nvidia-smi: host /host/cos (bin/nvidia-smi, lib64)",
        "gpubot-node: kernel log: none",
        f"gpubot-node: kernel log: journal {no_smi_on_path}/nojournal: No such file or directory",
    ]
