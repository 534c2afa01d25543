"""Bottleneck vocabulary shared by measured (msprof) and modelled (ascend-sim) kernel profiles.

The refinement prompt reads `bound` and `profile_text()`; both backends must speak the same words, so the
bound names and their texts come from ascend_sim.latency_model (imported, not copied), and the decision
rule (`classify_bound`) and the core-use hints are the latency model's own functions, re-exported here:
launch > device work -> "launch"; otherwise the busiest pipe if its ratio is >= 0.6, else "latency".

Pure Python.
"""
from __future__ import annotations

from ..ascend_sim.hardware import Ascend910B
from ..ascend_sim.latency_model import BOUND_TEXT, SATURATED, classify_bound, core_use_hints, pct

__all__ = ["BOUND_TEXT", "BOUNDS", "DEFAULT_HW", "SATURATED", "classify_bound", "core_use_hints", "pct"]

BOUNDS = tuple(BOUND_TEXT)  # hbm, mte2, mte3, vector, scalar, latency, launch

DEFAULT_HW = Ascend910B()
