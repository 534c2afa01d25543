"""What a test may read as a clean Ascend verdict.

The heavy-input trial (verifier/sandboxed/trial_inputs.py) draws a few dominant elements from the trial's secret
seed; for a float16 task the reference itself can then overflow the half range on some draws. A half overflow
warning is the emulator telling the same story about the candidate, so it is allowed exactly when the verdict
records a non-finite reference; any other warning, or a half overflow on ordinary inputs, is not."""
from __future__ import annotations


def unexplained_warnings(verdict) -> list[str]:
    warnings = list(verdict.details.get("emulator_warnings") or [])
    if (verdict.details.get("trials") or {}).get("nonfinite_reference"):
        warnings = [w for w in warnings if "half_overflow" not in str(w)]
    return warnings
