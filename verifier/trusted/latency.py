"""Latency statistics (trusted parent). The clock lives in the parent: each timed call is one
request/reply round trip to a worker, candidate and eager reference interleaved in random order
on the same fresh inputs, so load spikes and IPC costs hit both sides alike.

Reported: candidate and reference medians (ms), speedup = median of per-round ratios
t_ref / t_cand, a bootstrap 95% interval of that median, and a noise figure (IQR of the ratios
divided by their median; torch.utils.benchmark warns above 0.1).
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass


@dataclass
class Timing:
    candidate_ms: float
    reference_ms: float
    speedup: float
    noise: float
    ci_low: float
    ci_high: float
    rounds: int
    compile_ms: float | None = None
    speedup_vs_compile: float | None = None
    kind: str = "measured"  # or "estimate" (a backend's latency model, e.g. ascend-sim)

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "candidate_ms": self.candidate_ms, "reference_ms": self.reference_ms, "speedup": self.speedup,
            "noise": self.noise, "ci_low": self.ci_low, "ci_high": self.ci_high, "rounds": self.rounds,
            "compile_ms": self.compile_ms, "speedup_vs_compile": self.speedup_vs_compile,
        }


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[1], q[2]


def bootstrap_median_ci(values: list[float], rng: random.Random, resamples: int = 1000) -> tuple[float, float]:
    if len(values) < 3:
        return min(values), max(values)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]


def summarize(cand_s: list[float], ref_s: list[float], rng: random.Random,
              compiled_s: list[float] | None = None) -> Timing:
    ratios = [r / c for r, c in zip(ref_s, cand_s) if c > 0]
    q1, med, q3 = quartiles(ratios)
    lo, hi = bootstrap_median_ci(ratios, rng)
    timing = Timing(
        candidate_ms=statistics.median(cand_s) * 1e3,
        reference_ms=statistics.median(ref_s) * 1e3,
        speedup=med,
        noise=(q3 - q1) / med if med > 0 else float("inf"),
        ci_low=lo,
        ci_high=hi,
        rounds=len(ratios),
    )
    if compiled_s:
        timing.compile_ms = statistics.median(compiled_s) * 1e3
        timing.speedup_vs_compile = statistics.median([k / c for k, c in zip(compiled_s, cand_s) if c > 0])
    return timing
