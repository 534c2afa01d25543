"""The verifier's verdict o = (g_hack, g_comp, g_corr, latency); feasible = hack ∧ compile ∧ correct."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

GATES = ("hack", "compile", "correctness", "runtime", "timeout", "machine")  # machine: not judged (verifier/pool.py)


@dataclass
class Verdict:
    feasible: bool
    failed_gate: str | None  # None or one of GATES
    feedback: str  # actionable text for the generator (LLM)
    task: str = ""
    backend: str = "cpu"
    latency_ms: float | None = None
    reference_ms: float | None = None
    speedup: float | None = None
    noise: float | None = None  # IQR / median of the per-round speedup ratios
    speedup_ci: tuple[float, float] | None = None  # bootstrap 95% interval of the median ratio
    latency_kind: str = "measured"  # "estimate": modelled by the backend (ascend-sim), not measured
    compile_baseline_ms: float | None = None
    speedup_vs_compile: float | None = None
    gates: dict[str, bool | None] = field(default_factory=lambda: {"hack": None, "compile": None, "correctness": None})
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.failed_gate is not None and self.failed_gate not in GATES:
            raise ValueError(f"unknown gate {self.failed_gate!r}")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["speedup_ci"] = list(self.speedup_ci) if self.speedup_ci else None
        return data

    def summary(self) -> str:
        if self.feasible and self.latency_kind == "estimate" and self.latency_ms is not None:
            s = (f"FEASIBLE  {self.task}: ESTIMATED {self.latency_ms * 1e3:.2f} us (modelled, not measured)")
            if self.speedup is not None and self.reference_ms is not None:
                s += f", eager estimate {self.reference_ms * 1e3:.2f} us, modelled speedup {self.speedup:.2f}x"
            return s
        if self.feasible:
            s = f"FEASIBLE  {self.task}: candidate {self.latency_ms:.3f} ms" if self.latency_ms is not None else \
                f"FEASIBLE  {self.task}"
            if self.speedup is not None:
                s += (f", eager {self.reference_ms:.3f} ms, speedup {self.speedup:.2f}x "
                      f"(95% CI {self.speedup_ci[0]:.2f}-{self.speedup_ci[1]:.2f}, noise {self.noise:.2f})")
            if self.speedup_vs_compile is not None:
                s += f", vs torch.compile {self.speedup_vs_compile:.2f}x"
            return s
        return f"FAILED [{self.failed_gate}]  {self.task}\n{self.feedback}"
