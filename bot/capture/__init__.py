"""``gpubot capture``: a live cluster as a redacted scenario file, replayable with ``gpubot sim``.

Small modules, one job each: ``api`` (the API lists), ``select`` (what is kept), ``transport``
(node reads with raw answers), ``node_facts`` (readings -> ``nodes:`` sections), ``redact``
(what may leave the cluster), ``document`` (the YAML file) and ``run`` (the command).
"""

from bot.capture.redact import REDACTED, Redactions, redact_object, redact_objects
from bot.capture.select import Scope

__all__ = ["REDACTED", "Redactions", "Scope", "redact_object", "redact_objects"]
