"""Command parsing and name validation: every bad input is a one-line UsageError, never a crash.

The command table feeds both parsers, the usage lines and help; the tests below walk the table,
so a command added there is covered here without a new test.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.cli import _HANDLERS, build_parser, invocation_from_args, main
from bot.commands import (
    COMMANDS,
    Command,
    Invocation,
    Surface,
    command,
    command_prefix,
    commands_for,
    help_lines,
    parse_invocation,
    usage,
)
from bot.errors import UsageError
from bot.names import printable, shown, validate_name, validate_namespace
from bot.service import Service
from bot.settings import load_settings
from bot.slack.parse import parse_slash

SURFACES: tuple[Surface, ...] = ("cli", "slack")


def test_pod_and_workload_targets() -> None:
    assert parse_invocation(["why-pending", "gpu-demo-1", "-n", "ai"]) == Invocation(
        command="why-pending", kind="Pod", name="gpu-demo-1", namespace="ai"
    )
    inv = parse_invocation(["why-pending", "deploy/trainer", "--namespace=team-a", "--cluster", "prod"])
    assert (inv.kind, inv.name, inv.namespace, inv.cluster) == ("Deployment", "trainer", "team-a", "prod")
    assert parse_invocation(["why-pending", "sts/bert"]).kind == "StatefulSet"
    assert parse_invocation(["why-pending", "job/x"]).kind == "Job"
    assert parse_invocation(["node-status", "n1", "n2"]).nodes == ("n1", "n2")
    assert parse_invocation(["runbook", "guide-pod-triage"]).topic == "guide-pod-triage"
    assert parse_invocation(["why-pending", "p"]).namespace == "default"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["rm -rf /"],
        ["why-pending"],
        ["why-pending", "a", "b"],
        ["why-pending", "pod;reboot"],
        ["why-pending", "$(id)"],
        ["why-pending", "`id`"],
        ["why-pending", "p", "-n", "../etc"],
        ["why-pending", "p", "-n"],
        ["why-pending", "Pod-Upper"],
        ["why-pending", "ünïcødé"],
        ["why-pending", ""],
        ["why-pending", "x" * 10_000],
        ["why-pending", "cronjob/x"],
        ["nvml", "deploy/x"],
        ["node-status", "-n", "x"],
        ["node-status", "node|cat"],
        ["why-pending", "p", "--force"],
        ["runbook", "a", "b"],
        ["help", "me"],
    ],
)
def test_bad_input_is_one_line_usage_error(argv: list[str]) -> None:
    with pytest.raises(UsageError) as err:
        parse_invocation(argv)
    message = err.value.user_message
    assert message and "\n" not in message and len(message) < 400


@given(st.lists(st.text(max_size=300), max_size=6), st.sampled_from(SURFACES))
def test_parser_never_crashes(argv: list[str], surface: Surface) -> None:
    try:
        inv = parse_invocation(argv, surface=surface)
    except UsageError as err:
        assert "\n" not in err.user_message
        return
    # Whatever is accepted is a valid Kubernetes name: safe as an API parameter.
    for name in (inv.name, *inv.nodes):
        if name:
            validate_name(name)
    validate_namespace(inv.namespace)


@given(st.text(max_size=300))
def test_accepted_names_contain_no_shell_metacharacters(text: str) -> None:
    try:
        name = validate_name(text)
    except UsageError:
        return
    assert not set(name) & set(" ;|&$`'\"\\<>(){}[]*?!#~\n\t")


# -- the command table feeds every surface -------------------------------------------------


def _sample_argv(cmd: Command, surface: Surface) -> list[str]:
    """The command as typed: every positional and every option of ``surface``, with valid values."""
    argv = cmd.name.split()
    for arg in cmd.args:
        argv += ["x-1", "x-2"] if arg.count == "any" else ["x-1"]
    for opt in cmd.options_for(surface):
        if opt.check is None and surface == "slack":
            continue
        argv.append(opt.flags[0])
        if opt.metavar:
            argv.append("3" if opt.type is int else "v-1")
    return argv


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_every_command_parses_on_every_surface_that_offers_it(cmd: Command) -> None:
    args = build_parser().parse_args(_sample_argv(cmd, "cli"))
    assert args.spec is cmd
    if not cmd.invocation:
        assert "slack" not in cmd.surfaces and not cmd.diagnosis
        with pytest.raises(UsageError, match="unknown command"):
            parse_invocation(_sample_argv(cmd, "slack"), surface="slack")
        return
    from_cli = invocation_from_args(args)
    from_slack = parse_invocation(_sample_argv(cmd, "slack"), surface="slack")
    assert (from_cli.command, from_cli.surface, from_slack.surface) == (cmd.name, "cli", "slack")
    # the Slack-only switches (--private then --public: the last wins) are the only difference
    assert from_slack.private is (False if cmd.diagnosis else None) and from_cli.private is None
    assert dataclasses.replace(from_slack, surface="cli", private=None) == from_cli


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_every_cli_command_has_a_handler(cmd: Command) -> None:
    assert cmd.diagnosis or cmd.name in _HANDLERS


def test_prefix_and_usage_follow_the_surface() -> None:
    assert (command_prefix("cli"), command_prefix("slack")) == ("gpubot", "/gpu")
    assert usage("node-status", "slack") == "/gpu node-status [NODE ...] [--cluster NAME] [--private] [--public]"
    assert usage("node-status", "cli") == (
        "gpubot node-status [NODE ...] [--cluster NAME] [--scenario FILE] [--json] [--node-access auto|agent|ssh] "
        "[--png FILE] [--kubeconfig PATH] [-o text|json|yaml|wide] [-A]"
    )
    assert usage(command("runbook"), "slack") == "/gpu runbook [NAME]"
    with pytest.raises(UsageError, match=r"usage: /gpu why-pending \(POD \| KIND/NAME\) \[-n NAMESPACE\]"):
        parse_invocation(["why-pending"], surface="slack")
    with pytest.raises(UsageError, match="usage: gpubot nvml POD"):
        parse_invocation(["nvml", "deploy/x"])
    with pytest.raises(UsageError, match=r"usage: /gpu node-status \[NODE \.\.\.\] \[--cluster NAME\] \[--private\]"):
        parse_invocation(["node-status", "-n", "ai"], surface="slack")


def test_slack_invocations_say_where_they_came_from() -> None:
    settings = load_settings(env={})
    assert parse_slash("why-pending p -n ai", channel_id="C1", settings=settings).surface == "slack"
    assert parse_slash("", channel_id="C1", settings=settings) == Invocation(command="help", surface="slack")
    assert parse_invocation(["help"]).surface == "cli"


@pytest.mark.parametrize("surface", SURFACES)
def test_help_lists_every_command_of_its_surface_with_its_prefix(surface: Surface) -> None:
    text = Service(load_settings(env={})).help_text(surface)
    lines = text.splitlines()
    other = command_prefix("slack" if surface == "cli" else "cli")
    for cmd in COMMANDS:
        line = f"  {usage(cmd, surface)} — {cmd.summary}"
        assert (line in lines) == (surface in cmd.surfaces), (surface, cmd.name)
    assert not [x for x in lines if x.lstrip().startswith(other + " ")]
    assert f"Guides ({command_prefix(surface)} runbook NAME):" in lines
    assert help_lines(surface) == lines[: len(help_lines(surface))]


def test_gpubot_help_command_and_dash_dash_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {usage(c, 'cli')} — " in out for c in commands_for("cli"))
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--help"])
    assert done.value.code == 0
    listing = capsys.readouterr().out
    for cmd in commands_for("cli"):
        assert f"    {cmd.name.split()[0]} " in listing, cmd.name
    with pytest.raises(SystemExit):
        build_parser().parse_args(["nvml", "--help"])
    assert capsys.readouterr().out.startswith(f"usage: {usage('nvml', 'cli')}\n")


# -- argparse and the Slack parser accept the same diagnosis arguments ----------------------


def _tokens(cmd: Command) -> list[str]:
    """Words from the table's own flags (in every form argparse reads), good and bad values."""
    words = ["x-1", "deploy/trainer", "cronjob/x", "Pod-Upper", "pød", "", "-", "--bogus", "-z", "-1"]
    for opt in cmd.options_for("slack"):
        if "cli" not in opt.surfaces:  # Slack-only switches (--private): tests/slack/test_private.py
            continue
        for flag in opt.flags:
            words += [flag, f"{flag}=ai", f"{flag}=", f"{flag}=Bad_Name"]
            if flag.startswith("--"):  # abbreviations: argparse must not guess what Slack refuses
                words += [flag[:-1], f"{flag[:-1]}=ai"]
            else:
                words += [f"{flag}ai", f"{flag}-x"]
    return words


@given(st.data())
def test_argparse_and_the_slack_parser_accept_the_same_diagnosis_arguments(data: st.DataObject) -> None:
    cmd = data.draw(st.sampled_from([c for c in COMMANDS if c.diagnosis]))
    rest = data.draw(st.lists(st.sampled_from(_tokens(cmd)), max_size=6))
    try:
        from_cli: Invocation | None = invocation_from_args(build_parser().parse_args([cmd.name, *rest]))
    except UsageError:
        from_cli = None
    try:
        from_slack: Invocation | None = parse_invocation([cmd.name, *rest], surface="slack")
    except UsageError:
        from_slack = None
    if from_cli is None or from_slack is None:
        assert from_cli is from_slack, (rest, from_cli, from_slack)
    else:
        assert dataclasses.replace(from_slack, surface="cli") == from_cli, rest



@pytest.mark.parametrize("cmd", commands_for("cli"), ids=lambda c: c.name)
def test_the_parser_narrowed_to_a_command_reads_it_as_the_whole_parser_does(cmd: Command) -> None:
    """``build_parser(words)`` builds only the typed command's parser: the same answer, the same
    errors (with the command's usage), the same help as the parser of every command."""
    argv = _sample_argv(cmd, "cli")
    narrowed, whole = build_parser(argv), build_parser()
    assert narrowed is not whole
    assert vars(narrowed.parse_args(argv)) == vars(whole.parse_args(argv))
    for bad in ([*argv, "--no-such-flag"], [*cmd.name.split(), *(["x-1"] * 5), "--json=1"]):
        errors = []
        for parser in (narrowed, whole):
            with pytest.raises((UsageError, SystemExit)) as caught:
                parser.parse_args(bad)
            errors.append(str(getattr(caught.value, "user_message", caught.value)))
        assert errors[0] == errors[1]


def test_a_line_that_does_not_begin_with_a_command_gets_every_commands_parser() -> None:
    for words in ([], ["--help"], ["-v", "why-pending", "p"], ["why-pendng", "p"], ["x"]):
        assert build_parser(words) is build_parser()

@pytest.mark.parametrize(
    "rest",
    [
        ["n1", "--cluster", "c", "n2"],
        ["--context=c", "n1"],
        ["-nai", "x-1"],
        ["x-1", "-n=ai", "--namespace", "team"],
    ],
)
def test_options_anywhere_in_both_parsers(rest: list[str]) -> None:
    name = "node-status" if rest[0] in ("n1", "--context=c") else "why-pending"
    from_slack = parse_invocation([name, *rest], surface="slack")
    assert dataclasses.replace(from_slack, surface="cli") == invocation_from_args(
        build_parser().parse_args([name, *rest])
    )


# -- names are echoed as typed; only what would not print is escaped -------------------------


def test_a_unicode_name_is_echoed_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError) as err:
        parse_invocation(["why-pending", "pød-1"], surface="slack")
    assert "'pød-1'" in err.value.user_message and "\\x" not in err.value.user_message
    with pytest.raises(UsageError, match="unknown command 'pød'"):
        parse_invocation(["pød"], surface="slack")
    assert main(["node-status", "nöde"]) == 2
    assert "'nöde'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "echo"),
    [
        ("p\x1b[31m", "'p\\x1b[31m'"),
        ("a\nb", "'a\\nb'"),
        ("tab\there", "'tab\\there'"),
        ("rtl\u202eexe", "'rtl\\u202eexe'"),
        ("del\x7f", "'del\\x7f'"),
    ],
)
def test_control_characters_are_escaped(typed: str, echo: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert shown(typed) == echo
    with pytest.raises(UsageError) as err:
        parse_invocation(["why-pending", typed], surface="slack")
    message = err.value.user_message
    assert echo in message and message.isprintable()
    assert main(["why-pending", "p", typed]) == 2  # argparse's own "unrecognized arguments"
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and stderr.rstrip("\n").isprintable()


def test_printable_keeps_printable_text_and_clips_long_echoes() -> None:
    assert printable("pød-1 ünïcødé ✓") == "pød-1 ünïcødé ✓"
    assert shown("x" * 100) == "'" + "x" * 40 + "…'"
