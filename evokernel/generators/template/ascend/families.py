"""The Ascend C back end's family table: one module per family, each providing

* ``NAME`` -- the family (a schedule's ``family``, an operator's ``family``);
* ``STAGE`` -- the plan stage family (:mod:`..front.lower`) it drafts, or None (reached through another family's
  entry: ``ascend_elementwise`` is a flat ``row`` stage); ``SEVERAL_STAGES`` -- whether it takes plans of more
  than one stage (it then refuses by name what it cannot fuse);
* ``prepare(plan, task_name, task_source)`` -- the task as the family's operator (``.family`` names the row that
  renders it), or AnalysisError naming what it does not write;
* ``KNOBS`` (knob -> allowed values), ``DEFAULTS`` (the conservative value of each), ``TRANSFORMS`` (its own
  refinement transforms, after the vector ones in :mod:`.schedules`), ``priors(op)`` (small scores ordering
  refinements), optionally ``EXPLORE_FIXED`` (knob values an explored draft keeps);
* ``render_project(op, knobs)`` -- the six strings of the operator project (kernel and host), the buffer counts
  and the host's geometry (None: no tiling for these shapes).

A new family is one module with these names and one row in ``FAMILIES``.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from evokernel.generators.template.ascend import colreduce, elementwise, row
from evokernel.generators.template.ascend.conv import family as conv
from evokernel.generators.template.ascend.cube import family as cube
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.lower import Plan

FAMILIES: dict[str, ModuleType] = {m.NAME: m for m in (elementwise, row, colreduce, cube, conv)}
BY_STAGE: dict[str, ModuleType] = {m.STAGE: m for m in FAMILIES.values() if m.STAGE is not None}


def prepare(plan: Plan, task_name: str, task_source: str = "") -> Any:
    """The plan as one operator of the family that drafts its first stage, or AnalysisError saying why not."""
    first = plan.stages[0].family if plan.stages else None
    family = BY_STAGE.get(first) if first is not None else None
    if family is not None and family.SEVERAL_STAGES:
        return family.prepare(plan, task_name, task_source)
    if len(plan.stages) != 1:
        fams = [s.family for s in plan.stages]
        raise AnalysisError(f"the task needs {len(plan.stages)} kernels ({' -> '.join(fams)}); the Ascend C "
                            "templates write one operator (elementwise chains, last-dim reductions, softmax, "
                            "normalisations and their fusions)")
    if family is None:
        raise AnalysisError(f"no Ascend C template for the {first} family (supported: elementwise chains, "
                            "last-dim reductions, softmax/log_softmax, layer/RMS norm and their fusions)")
    return family.prepare(plan, task_name, task_source)


def render_project(op: Any, knobs: dict[str, Any]) -> tuple[dict[str, str], Any, dict[str, int] | None]:
    """The six strings of ``op``'s operator project, its buffer counts and the host's geometry (its family's)."""
    return FAMILIES[op.family].render_project(op, knobs)
