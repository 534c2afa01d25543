"""The cpu back end's family table: one module per stage family of the plan (:mod:`..front.lower` names a stage's
family), each providing

* ``NAME`` -- the family (the table's key, a stage's ``family``);
* ``KNOBS`` -- its knob space (knob -> allowed values) and ``DEFAULTS`` -- the conservative value of each;
* ``TRANSFORMS`` (optional) -- refinement transforms of its own knobs, appended to the target's list
  (:mod:`.schedules`; the shared ones keep their base order there);
* ``Writer`` -- a :class:`~.stage.StageWriter` whose ``render(k, stage)`` writes the stage's C++ and its call.

A new family is one module with these names and one row here.
"""
from __future__ import annotations

from types import ModuleType

from evokernel.generators.template.cpu import conv, gemm, gemv, groupnorm, layout, midreduce, pool, rnn, row, scan

FAMILIES: dict[str, ModuleType] = {m.NAME: m for m in (row, gemm, gemv, conv, pool, scan, midreduce, groupnorm, layout,
                                                       rnn)}
