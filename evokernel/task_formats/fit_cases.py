"""Fitting a cases task (NPUKernelBench's format, `cases.py`): every case scaled to a backend's byte budget.
Apart from `cases.py` because the task module reads cases (`read_task`) and must not import fitting back."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from evokernel.task_formats.cases import CASES, fit_case
from evokernel.tasks.fit import budget_for
from evokernel.tasks.task import with_sizes


def fit_cases(task: Any, backend: str) -> Any:
    """``task`` (a cases task) with every case fitted to ``backend``'s byte budget; ``Task.fit`` records
    ``changed`` (the new cases, so ``applied_overrides`` reproduces the source), ``bytes`` (the largest case),
    ``cases_scaled`` and ``fits``."""
    b = budget_for(backend)
    cases = list(task.cases)
    fitted, sizes = zip(*(fit_case(c, b.max_bytes) for c in cases))
    scaled = sum(1 for a, c in zip(fitted, cases) if a != c)
    record: dict[str, Any] = {"mode": "auto", "backend": backend, "changed": {}, "bytes": max(sizes),
                              "est_ms": 0.0, "fits": max(sizes) <= b.max_bytes, "cases": len(cases),
                              "cases_scaled": scaled, "budget": {"max_bytes": b.max_bytes}}
    if not record["fits"]:
        record["note"] = "a case stays above the byte budget with every dimension at its floor"
    if not scaled:
        return replace(task, fit=record)
    record["changed"] = {CASES: [f"{len(cases)} cases as written", list(fitted)]}
    return with_sizes(task, {CASES: tuple(fitted)}, record)
