"""From the text typed after ``/gpu`` to a validated ``Invocation``.

Slack delivers whatever the user typed, smart quotes and all. Splitting never raises (unbalanced
quotes fall back to whitespace splitting) and input is length-limited before anything else looks
at it; validation of names is ``bot.commands``' job. Nothing here runs a command.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping

from bot.commands import MAX_INPUT, Invocation, command, command_prefix, parse_invocation
from bot.errors import UsageError
from bot.settings import Settings

_SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})


def tokenize(text: str) -> list[str]:
    """Shell-like words, but a stray quote is never an error: fall back to whitespace splitting."""
    text = text.translate(_SMART_QUOTES).replace("\u00a0", " ")
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        return text.split()


def parse_slash(text: str, *, channel_id: str, settings: Settings) -> Invocation:
    """The invocation for ``/gpu <text>`` typed in ``channel_id``, with the channel's defaults
    (cluster, private answers) filled in.

    Raises ``UsageError`` for malformed input and ``ConfigError`` for an unknown cluster, both
    before any cluster is contacted.
    """
    if len(text) > MAX_INPUT:
        raise UsageError(f"input too long (over {MAX_INPUT} characters). try `{command_prefix('slack')} help`")
    argv = tokenize(text) or ["help"]
    inv = parse_invocation(argv, surface="slack")
    inv = with_default_cluster(inv, channel_id, settings.channel_clusters, settings)
    if inv.private is None and command(inv.command).diagnosis:
        private = channel_id in settings.private_channels or "*" in settings.private_channels
        inv = dataclasses.replace(inv, private=private)
    return inv


def with_default_cluster(
    inv: Invocation, channel_id: str, channel_clusters: Mapping[str, str], settings: Settings
) -> Invocation:
    """Fill in the channel's cluster when none was named, then check that the cluster exists."""
    if not command(inv.command).diagnosis:
        return inv
    cluster = inv.cluster or channel_clusters.get(channel_id, "")
    settings.cluster(cluster or None)  # raises ConfigError naming the configured clusters
    return dataclasses.replace(inv, cluster=cluster) if cluster != inv.cluster else inv
