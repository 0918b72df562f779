"""YAML that gpubot writes for people and for itself to read back.

PyYAML writes an object reached twice as an anchor and aliases (``&id001``, ``*id001``). gpubot's
own reader refuses a document whose aliases expand past a bound (an alias bomb), so a generated
cluster that shares one image list among all its nodes came back unreadable; and an alias in a
report or a capture is noise to the person reading it. Every object is written out in full.
"""

from __future__ import annotations

from typing import Any

import yaml

_BASE: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _NoAliasDumper(_BASE):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any, **options: Any) -> str:
    """``yaml.safe_dump`` without anchors or aliases; keys stay in their order."""
    return str(yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True, **options))
