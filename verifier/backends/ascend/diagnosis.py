"""Bottleneck vocabulary shared by measured (msprof) and modelled (ascend-sim) kernel profiles.

The refinement prompt reads `bound` and `profile_text()`; both backends must speak the same words, so the
bound names and their texts come from ascend_sim.latency_model (imported, not copied), and the decision
rule below is the one `estimate_kernel` applies (launch > device work -> "launch"; otherwise the busiest
pipe if its ratio is >= 0.6, else "latency"). latency_model.py keeps its own inline copy of that rule for
now; it could call `classify_bound` instead (not changed here on purpose).

Pure Python.
"""
from __future__ import annotations

from ..ascend_sim.hardware import Ascend910B
from ..ascend_sim.latency_model import BOUND_TEXT, pct

__all__ = ["BOUND_TEXT", "BOUNDS", "SATURATED", "classify_bound", "core_use_hints", "pct"]

BOUNDS = tuple(BOUND_TEXT)  # hbm, mte2, mte3, vector, scalar, latency, launch
SATURATED = 0.6  # a pipe busy at least this share of the core time is "the" bound (as estimate_kernel)


def classify_bound(device_us: float, launch_us: float, ratios: dict[str, float], hbm_bound: bool = False) -> str:
    """ratios: pipe -> busy share of the critical core's time, keys among mte2, mte3, vector, scalar."""
    if launch_us > device_us:
        return "launch"
    if hbm_bound:
        return "hbm"
    if not ratios:
        return "latency"
    top = max(ratios, key=lambda k: ratios[k])
    return top if ratios[top] >= SATURATED else "latency"


def core_use_hints(block_dim: int, cores: int, bound: str) -> list[str]:
    """The core-count hints of the latency model (poor core use, a partial last wave), same wording."""
    hints: list[str] = []
    if block_dim <= 0 or cores <= 0:
        return hints
    waves = -(-block_dim // cores)
    used = min(block_dim, cores)
    if waves == 1 and used < cores and (bound != "launch" or used * 4 <= cores):
        hints.append(f"only {used} of {cores} AIV cores used (block_dim {block_dim}): split the work "
                     f"over up to {cores} blocks (GetCoreNumAiv())")
    if bound != "launch" and waves > 1 and block_dim % cores:
        rem = block_dim % cores
        hints.append(f"{block_dim} blocks on {cores} cores = {waves} waves, the last with {rem} block(s) "
                     f"({cores - rem} cores idle in it): use block_dim = {cores} with a loop over the work")
    return hints


DEFAULT_HW = Ascend910B()
