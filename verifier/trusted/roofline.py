"""A roofline profile of a feasible CPU kernel: what bounds it, for refining (paper §3.6).

The CPU has no profiler here (hardware counters are "not supported" in this VM; ``perf stat`` counts
task-clock only), so the profile is an estimate from what the kernel must do, priced like the fit's
eager estimate (`evokernel.tasks.fit.CPU_COSTS`, ns per unit of work on one core):

* **memory roof**: the compulsory traffic, inputs + outputs + parameters read or written once, at the
  streaming price of a byte;
* **compute roof**: the reference's work by class (matmul/conv FLOPs, pooling windows, reductions,
  transcendental elementwise outputs; the meta probe of `evokernel.tasks.category.probe` counts them), at
  eager PyTorch's price per unit (a hand kernel can beat those: a compute "efficiency" above 100% is
  possible and says so);
  where eager's price is its implementation rather than the work, the work is priced as the operation a
  kernel can reorder it into (`ROOF_CLASS`): a strided reduction as a contiguous one (a kernel picks its
  loop order), a pooling window as a reduction of its elements (max: the max price, avg: the sum price);
* both **calibrated on this machine**: the eager reference was timed in the same rounds as the kernel, so
  ``scale = measured eager / estimated eager`` (clamped to [0.2, 5]: a tiny task's estimate is mostly
  per-op overhead) turns the development machine's prices into this one's.

The bound names the larger roof (``memory`` or ``compute``), or ``overhead`` when both roofs are under
20 us (per-call costs, not work, decide such a kernel). The profile text says how far the kernel is from
its roof; refining and the bottleneck-matched retrieval read the bound (`nodes/update.py`).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

OVERHEAD_MS = 0.02  # both roofs under this: a per-call-cost kernel
SCALE_RANGE = (0.2, 5.0)
# work classes priced as another class in the compute roof (see the module docstring)
ROOF_CLASS = {"pool:max": "reduce:max", "pool:max1d": "reduce:max", "pool:avg": "reduce:sum",
              "pool:avg1d": "reduce:sum"}


def roof_class(kind: str) -> str:
    if kind.startswith("reduce_strided:"):
        return "reduce:" + kind.split(":", 1)[1]
    return ROOF_CLASS.get(kind, kind)
_cache: dict[str, Any] = {}
_lock = threading.Lock()

# how the work classes read in the profile text
_UNITS = {"mm": "matmul FLOPs", "sdpa": "attention FLOPs", "conv": "convolution FLOPs", "pool": "pooling window elements",
          "reduce": "reduced elements", "reduce_strided": "reduced elements (strided)", "elem": "elementwise outputs"}


@dataclass
class Roofline:
    latency_ms: float  # the kernel, measured
    reference_ms: float  # eager, measured in the same rounds
    bytes: int  # compulsory traffic
    mem_ms: float  # calibrated roofs
    compute_ms: float
    scale: float  # measured eager / estimated eager
    work: dict[str, float] = field(default_factory=dict)  # work class -> units

    @property
    def roof_ms(self) -> float:
        return max(self.mem_ms, self.compute_ms)

    @property
    def bound(self) -> str:
        if self.roof_ms < OVERHEAD_MS:
            return "overhead"
        return "memory" if self.mem_ms >= self.compute_ms else "compute"

    @property
    def efficiency(self) -> float:
        """roof / latency: 1.0 is at the roof."""
        return self.roof_ms / self.latency_ms if self.latency_ms > 0 else 0.0

    def diagnosis(self) -> dict[str, Any]:
        return {"bound": self.bound, "kind": "roofline estimate", "roof_ms": self.roof_ms, "mem_ms": self.mem_ms,
                "compute_ms": self.compute_ms, "bytes": self.bytes, "efficiency": self.efficiency,
                "calibration": self.scale, "work": dict(self.work)}

    def text(self) -> str:
        gbps = self.bytes / (self.mem_ms * 1e6) if self.mem_ms > 0 else 0.0
        work = ", ".join(f"{_fmt(n)} {_UNITS.get(k.split(':')[0], k)} ({k.split(':', 1)[-1]})" if ":" in k
                         else f"{_fmt(n)} {_UNITS.get(k, k)}" for k, n in sorted(self.work.items(), key=lambda kv: -kv[1]))
        lines = [
            f"latency {self.latency_ms:.4f} ms; eager {self.reference_ms:.4f} ms, speedup "
            f"{self.reference_ms / self.latency_ms:.2f}x" if self.latency_ms > 0 else "",
            f"memory roof {self.mem_ms:.4f} ms: {self.bytes / 2**20:.1f} MiB of inputs, outputs and parameters "
            f"moved once at {gbps:.1f} GB/s",
            f"compute roof {self.compute_ms:.4f} ms" + (f": {work}" if work else ": no compute-heavy work"),
        ]
        eff = self.efficiency
        if self.bound == "overhead":
            verdict = ("bound: overhead (both roofs are under 20 us: per-call costs, threads started, "
                       "allocations, decide this kernel)")
        else:
            verdict = (f"bound: {self.bound}; the kernel runs at {eff:.0%} of its {self.bound} roof"
                       + (" (the compute roof is eager PyTorch's throughput per unit of work, which a kernel can "
                          "beat)" if eff > 1 and self.bound == "compute" else ""))
            if eff < 0.5:
                verdict += (": far from it; look at vectorisation, parallel loops and passes over memory"
                            if self.bound == "memory" else
                            ": far from it; look at vectorisation, blocking for cache and parallel loops")
        lines.append(verdict)
        lines.append(f"(estimated from the reference's work at task_fit's prices, calibrated by the measured "
                     f"eager time: x{self.scale:.2f})")
        return "\n".join(ln for ln in lines if ln)


def _fmt(n: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.3g}"


def _probe(task: Any) -> Any:
    """The task's meta probe with work counts, once per task source (trusted: the task file, meta device)."""
    from evokernel.tasks.category import probe

    key = task.key
    with _lock:
        if key not in _cache:
            _cache[key] = probe(task.source, str(task.path), count=True, trace=False)
        return _cache[key]


def roofline(task: Any, latency_ms: float | None, reference_ms: float | None) -> Roofline | None:
    """The roofline of a kernel of ``task`` measured at ``latency_ms`` next to eager's ``reference_ms``;
    None when the task cannot be probed or a time is missing."""
    if not latency_ms or not reference_ms or latency_ms <= 0 or reference_ms <= 0:
        return None
    from evokernel.tasks.fit import budget_for, estimate_ms

    p = _probe(task)
    if not getattr(p, "ok", False):
        return None
    budget = budget_for("cpu")
    eager_est = estimate_ms(p, budget)
    if eager_est <= 0:
        return None
    scale = min(max(reference_ms / eager_est, SCALE_RANGE[0]), SCALE_RANGE[1])
    mem_ms = p.total_bytes * budget.cost("byte") * 1e-6 * scale
    work = {k: float(n) for k, n in p.work.items() if n}
    compute_ms = sum(n * budget.cost(roof_class(k)) for k, n in work.items()) * 1e-6 * scale
    return Roofline(latency_ms=float(latency_ms), reference_ms=float(reference_ms), bytes=int(p.total_bytes),
                    mem_ms=mem_ms, compute_ms=compute_ms, scale=scale, work=work)
