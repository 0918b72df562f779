"""One source for runbooks: the package (and so the image) carries ``runbooks/``; ``runbook_dir``
names an override directory layered on top, which the Helm chart mounts from a ConfigMap.

The tests build the package's files with setuptools' own ``build_py`` (offline, about a second),
layer override directories on the built-in set, and add an override to the chart the two ways
``deploy/README.md`` says (``helm --set-file``, and a user's kustomization). They derive every
file and name from the built-in runbooks, so they do not depend on what the runbooks say.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.engine.runbook_dir import (
    builtin_runbook_dir,
    check_dir,
    check_with_overrides,
    load_with_overrides,
    runbook_files,
)
from bot.engine.runbook_model import Runbook, RunbookSet
from bot.errors import RunbookError
from tests.deploy.render import KUSTOMIZE, REPO, RUNBOOKS, kustomize_text, one, parse, render_text

DOCKERFILE = REPO / "deploy" / "Dockerfile"
DEPLOY_README = REPO / "deploy" / "README.md"


def _sources(rs: RunbookSet) -> dict[str, str]:
    """runbook name -> the file it was read from, for every diagnosis and guide."""
    return {rb.name: rb.source for rb in [*rs.diagnoses.values(), *rs.guides.values()]}


def _a_diagnosis(rs: RunbookSet) -> Runbook:
    return rs.diagnoses[sorted(rs.diagnoses)[0]]


def _a_guide(rs: RunbookSet) -> Runbook:
    return rs.guides[sorted(rs.guides)[0]]


def _renamed_copy(guide: Runbook, new_name: str) -> str:
    """The text of a built-in guide under another name: a valid new runbook."""
    text = Path(guide.source).read_text(encoding="utf-8")
    renamed = re.sub(rf"(?m)^name: {re.escape(guide.name)}\s*$", f"name: {new_name}", text, count=1)
    assert renamed != text, f"{guide.source}: no top-level 'name: {guide.name}' line to rename"
    return renamed


@pytest.fixture(scope="module")
def builtin() -> RunbookSet:
    return load_with_overrides(None)


# ---------------------------------------------------------------------------------------------
# the package and the image carry the runbooks


def _setup_kwargs(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What setup.py hands to setuptools (it computes packages relative to the repository)."""
    import setuptools  # here, not at the top: every worker collects this file, and it costs 0.3 s

    captured: dict[str, Any] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    monkeypatch.chdir(REPO)
    runpy.run_path(str(REPO / "setup.py"), run_name="__main__")
    assert captured, "setup.py did not call setuptools.setup"
    return captured


def test_built_package_carries_the_runbooks_and_finds_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """setuptools' build_py (what a wheel and the image's `pip install .` contain) puts runbooks/
    inside the package, and an installed package loads them as its built-in set."""
    import setuptools

    dist = setuptools.Distribution({"name": "gpubot", "script_name": "setup.py", **_setup_kwargs(monkeypatch)})
    build = dist.get_command_obj("build_py")
    build.build_lib = str(tmp_path)  # type: ignore[attr-defined]
    build.compile = 0  # type: ignore[attr-defined]
    build.ensure_finalized()
    build.run()
    monkeypatch.undo()
    built = tmp_path / "bot" / "runbooks"
    expected = {p.name: p.read_bytes() for p in runbook_files(RUNBOOKS)}
    assert expected and {p.name: p.read_bytes() for p in built.iterdir()} == expected
    modules = {str(p.relative_to(REPO)) for p in (REPO / "bot").rglob("*.py")}
    assert modules <= {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.py")}
    assert (tmp_path / "bot" / "py.typed").is_file()
    # an installed package has no runbooks/ next to it: only the packaged copy can be found
    script = (
        "import json, bot; from bot.engine.runbook_dir import builtin_runbook_dir, check_with_overrides;"
        "rs, problems = check_with_overrides(None, None);"
        "print(json.dumps([bot.__file__, str(builtin_runbook_dir()), problems, sorted(rs.diagnoses)]))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    module, found, problems, commands = json.loads(proc.stdout.splitlines()[-1])
    assert Path(module).is_relative_to(tmp_path) and Path(found) == built
    assert problems == [] and commands == sorted(load_with_overrides(None).diagnoses)


def test_image_installs_the_runbooks_with_the_package() -> None:
    """The build stage hands runbooks/ and setup.py to `pip install .`; the final stage adds no copy."""
    build, final = re.split(r"(?m)^FROM ", DOCKERFILE.read_text(encoding="utf-8"))[1:][-2:]
    copies = re.findall(r"(?m)^COPY (?!--from)(.+) (\S+)$", build)
    sources = {src.rstrip("/") for line, _ in copies for src in line.split()}
    assert {"pyproject.toml", "setup.py", "bot", "runbooks"} <= sources
    install = build.index("pip install --no-compile --no-deps .")
    assert all(build.index(f"COPY {line} {dest}") < install for line, dest in copies)
    final = re.sub(r"(?m)^#.*$", "", final)  # comments may explain; instructions must not copy
    assert "runbooks" not in final, "the image's runbooks come inside the package"
    assert "GPUBOT_RUNBOOK_DIR" not in final, "unset in the image: no overrides unless a deployment mounts some"


# ---------------------------------------------------------------------------------------------
# overrides layered on the built-in set


def test_no_or_empty_overrides_are_the_builtin_set(tmp_path: Path, builtin: RunbookSet) -> None:
    assert check_with_overrides(None, None)[1] == []
    assert builtin_runbook_dir() == RUNBOOKS  # a source checkout: the repository's runbooks/
    assert _sources(builtin) == _sources(check_dir(RUNBOOKS, None)[0])
    mount = tmp_path / "overrides"  # an empty ConfigMap volume: only the kubelet's dot-entries
    (mount / "..2026_01_01_00_00_00.000000001").mkdir(parents=True)
    (mount / "..data").symlink_to("..2026_01_01_00_00_00.000000001")
    assert _sources(load_with_overrides(mount)) == _sources(builtin)
    # the built-in directory as its own override changes nothing
    assert _sources(load_with_overrides(RUNBOOKS)) == _sources(builtin)


def test_override_replaces_the_file_of_its_name_and_new_files_add(
    tmp_path: Path, builtin: RunbookSet, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = tmp_path / "overrides"
    overrides.mkdir()
    diagnosis, guide = _a_diagnosis(builtin), _a_guide(builtin)
    replaced = overrides / Path(diagnosis.source).name
    shutil.copy(diagnosis.source, replaced)
    added = overrides / "guide-local-notes.yaml"
    added.write_text(_renamed_copy(guide, "guide-local-notes"), encoding="utf-8")
    rs = load_with_overrides(overrides)
    expected = {**_sources(builtin), diagnosis.name: str(replaced), "guide-local-notes": str(added)}
    assert _sources(rs) == expected
    assert set(rs.catalogue) == set(builtin.catalogue)
    # `gpubot runbooks validate DIR` checks exactly what the bot would load
    assert main(["runbooks", "validate", str(overrides)]) == 0
    assert "valid" in capsys.readouterr().out


def test_invalid_override_fails_with_its_file_and_line(
    tmp_path: Path, builtin: RunbookSet, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = tmp_path / "overrides"
    overrides.mkdir()
    diagnosis = _a_diagnosis(builtin)
    broken = overrides / Path(diagnosis.source).name
    text = Path(diagnosis.source).read_text(encoding="utf-8").rstrip("\n") + "\n"
    line = text.count("\n") + 1
    broken.write_text(text + "not_a_runbook_key: 1\n", encoding="utf-8")
    problems = check_with_overrides(overrides, None)[1]
    assert len(problems) == 1 and problems[0].startswith(f"{broken}:{line}: "), problems
    assert "not_a_runbook_key" in problems[0]
    with pytest.raises(RunbookError) as caught:
        load_with_overrides(overrides)
    assert caught.value.problems == problems
    assert main(["runbooks", "validate", str(overrides)]) == 2  # a configuration to fix
    assert f"{broken}:{line}: " in capsys.readouterr().out


def test_overrides_are_validated_with_the_builtin_set_as_one(tmp_path: Path, builtin: RunbookSet) -> None:
    """A new file that reuses a built-in runbook's name is a conflict across the two directories."""
    overrides = tmp_path / "overrides"
    overrides.mkdir()
    guide = _a_guide(builtin)
    clash = overrides / f"{guide.name}-copy.yaml"
    shutil.copy(guide.source, clash)
    problems = check_with_overrides(overrides, None)[1]
    assert len(problems) == 1, problems
    assert f"'{guide.name}'" in problems[0]
    assert str(clash) in problems[0] and guide.source in problems[0]


def test_missing_override_directory_is_a_problem(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert check_with_overrides(missing, None)[1] == [f"{missing}: runbook override directory not found"]
    with pytest.raises(RunbookError):
        load_with_overrides(missing)


# ---------------------------------------------------------------------------------------------
# an override through the chart, as deploy/README.md tells operators


def _mounted_overrides(objs: list[dict[str, Any]], into: Path) -> Path:
    """What the pod would see at GPUBOT_RUNBOOK_DIR: the runbooks ConfigMap its volume names."""
    deployment = one(objs, "Deployment", "gpubot")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == env["GPUBOT_RUNBOOK_DIR"])
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    configmap = one(objs, "ConfigMap", volume["configMap"]["name"])
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    into.mkdir()
    for key, text in (configmap.get("data") or {}).items():
        (into / key).write_text(text, encoding="utf-8")
    return into


def test_helm_set_file_adds_an_override_that_validates(tmp_path: Path, builtin: RunbookSet) -> None:
    readme = DEPLOY_README.read_text(encoding="utf-8")
    assert "--set-file 'runbookOverrides." in readme and "gpubot runbooks validate" in readme
    diagnosis = _a_diagnosis(builtin)
    name = Path(diagnosis.source).name
    mine = tmp_path / "my-runbooks"
    mine.mkdir()
    shutil.copy(diagnosis.source, mine / name)
    key = name.replace(".", "\\.")  # helm's --set-file path syntax escapes the dots of a key
    objs = parse(render_text(None, "--set-file", f"runbookOverrides.{key}={mine / name}"))
    mounted = _mounted_overrides(objs, tmp_path / "mounted")
    assert sorted(p.name for p in mounted.iterdir()) == [name]
    rs = load_with_overrides(mounted)
    assert rs.diagnoses[diagnosis.command].source == str(mounted / name)


def test_users_kustomization_adds_an_override_that_validates(tmp_path: Path, builtin: RunbookSet) -> None:
    readme = DEPLOY_README.read_text(encoding="utf-8")
    assert "behavior: merge" in readme
    mine = tmp_path / "my-gpubot"
    (mine / "runbooks").mkdir(parents=True)
    diagnosis = _a_diagnosis(builtin)
    name = Path(diagnosis.source).name
    shutil.copy(diagnosis.source, mine / "runbooks" / name)
    (mine / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(KUSTOMIZE / "base", mine)],
                "configMapGenerator": [
                    {
                        "name": "gpubot-runbooks",
                        "namespace": "gpubot",
                        "behavior": "merge",
                        "files": [f"runbooks/{name}"],
                    }
                ],
            }
        )
    )
    objs = parse(kustomize_text(mine))
    mounted = _mounted_overrides(objs, tmp_path / "mounted")
    assert sorted(p.name for p in mounted.iterdir()) == [name]
    rs = load_with_overrides(mounted)
    assert rs.diagnoses[diagnosis.command].source == str(mounted / name)
