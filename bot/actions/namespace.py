"""``namespace.label``: set the qGPU schedule-policy label, or copy the labels a working namespace has.

On TCE a namespace with only ``kubernetes.io/metadata.name`` is treated as a System namespace and
its qGPU pods never get a slice; the fix is the labels a namespace where GPU pods run already has
(``copy_from``), or just ``tke.cloud.tencent.com/qgpu-schedule-policy`` (``label``/``value``).
Labels only ever get added or set: none is removed.

Must never copy ``kubernetes.io/metadata.name`` (the API server owns it) or remove a label.
"""

from __future__ import annotations

import re
from typing import Any

from bot.actions.base import ActionContext, ActionOutcome, BaseAction, action
from bot.actions.steps import StepFailed, StepLog
from bot.errors import InvalidNameError, NotFoundError, UsageError
from bot.kube.objects import labels_of
from bot.names import validate_name, validate_namespace

DEFAULT_NS_LABEL = "kubernetes.io/metadata.name"
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def validate_label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if not name or not _NAME.match(name) or len(name) > 63:
        raise InvalidNameError(f"invalid label key {key[:80]!r}")
    if prefix:
        validate_name(prefix, what="label key prefix")
    return key


def validate_label_value(value: str) -> str:
    if len(value) > 63 or not _NAME.match(value):
        raise InvalidNameError(f"invalid label value {value[:80]!r}")
    return value


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (labels_of(obj)).items()}


@action("namespace.label")
class LabelNamespace(BaseAction):
    blast_radius = (
        "Adds labels to the namespace (none removed). qGPU pods created there afterwards are "
        "scheduled under that policy; running pods are untouched. Copying a tenant's labels also "
        "moves the namespace from System to that tenant on TCE."
    )
    done = "the namespace carries the labels; new qGPU pods there get scheduled"
    required = {"namespace": validate_namespace}
    optional = {"label": validate_label_key, "value": validate_label_value, "copy_from": validate_namespace}
    target_param = "namespace"

    def check_params(self, params: Any) -> dict[str, str]:
        out = super().check_params(params)
        by_label = "label" in out and "value" in out
        if by_label == ("copy_from" in out) or ("label" in out) != ("value" in out):
            raise UsageError("namespace.label: give either label and value, or copy_from")
        if out.get("label") == DEFAULT_NS_LABEL:
            raise UsageError(f"namespace.label: {DEFAULT_NS_LABEL} is set by the API server")
        return out

    async def _missing(self, ctx: ActionContext) -> dict[str, str]:
        ns = ctx.param("namespace")
        have = _labels(await ctx.kube.get_object("Namespace", ns))
        if ctx.param("copy_from"):
            source = _labels(await ctx.kube.get_object("Namespace", ctx.param("copy_from")))
            return {k: v for k, v in source.items() if k != DEFAULT_NS_LABEL and k not in have}
        key, value = ctx.param("label"), ctx.param("value")
        return {} if have.get(key) == value else {key: value}

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        ns = ctx.param("namespace")
        try:
            missing = await self._missing(ctx)
        except NotFoundError as exc:
            return False, exc.user_message
        if not missing:
            return False, f"namespace {ns} already has the label(s)"
        ctx.facts["labels"] = missing
        return True, f"namespace {ns} lacks " + ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))

    async def plan(self, ctx: ActionContext) -> list[str]:
        labels = ctx.facts.get("labels")
        if labels is None:
            labels = (
                {ctx.param("label"): ctx.param("value")} if ctx.param("label") else {"<missing labels>": ""}
            )
        shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
        return [f"PATCH namespace {ctx.param('namespace')} metadata.labels += {shown}"]

    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        ns = ctx.param("namespace")
        labels = ctx.facts.get("labels") or {}
        log = StepLog(ctx)
        try:
            await log.run(f"label namespace {ns}", ctx.writer.patch_namespace_labels(ns, labels))
        except StepFailed as failed:
            return ActionOutcome(
                False,
                f"labelling {ns} failed: {failed.step.detail}",
                log.steps,
                state=f"namespace {ns}: unchanged",
            )
        return ActionOutcome(
            True,
            f"namespace {ns} labelled ({len(labels)} label(s)).",
            log.steps,
            state=f"namespace {ns}: labelled",
        )
