"""The running gpubot's version, from one source: the installed package's metadata.

``pyproject.toml``'s ``version`` is the only place a release number is written. Everything that
shows one reads it from here (``gpubot --version``, ``/gpu help``) or is checked against it by a
test (``Chart.yaml``'s ``appVersion``, the image label set from the release tag). A source
checkout that was never installed has no metadata: it says so instead of guessing a number.
"""

from __future__ import annotations

import functools

#: the distribution name in pyproject.toml
DISTRIBUTION = "gpubot"
#: shown when gpubot runs from a checkout that was never installed (no package metadata)
UNKNOWN = "0+unknown"


@functools.cache
def version() -> str:
    """The installed distribution's version (``0+unknown`` without package metadata).

    ``importlib.metadata`` (with email, zipfile and csv) is imported here, when a version is shown,
    not by every command that imports this module."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return UNKNOWN
