"""What the simulator serves a resource as: its group, version, plural and printer columns.

Its own module so that the store's built-in table and the custom resources a scenario brings
(``bot.sim.custom_types``) build on one type without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry of a CustomResourceDefinition (``kubectl get``)."""

    name: str
    #: ``.spec.action``-style path (the subset of JSONPath CRDs use: dotted fields)
    json_path: str
    #: string | integer | date (a date prints as an age, as the real API server does)
    type: str = "string"


@dataclass(frozen=True)
class ResourceType:
    """One served resource, with what discovery must say about it so kubectl can find it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("get", "list", "watch", "patch", "update", "delete", "create")
    #: the printer columns of a custom resource (after NAME); empty = the built-in printers
    columns: tuple[PrinterColumn, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def singular(self) -> str:
        return self.kind.lower()
