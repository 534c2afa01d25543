"""Where the real KernelBench files are for tests: $EVOKERNEL_KERNELBENCH, else ../shared/benchmarks/kernelbench
beside the checkout (read in place, never copied). Tests that need them skip when they are absent."""
from __future__ import annotations

import os
from pathlib import Path

import pytest


def kernelbench_root() -> Path | None:
    env = os.environ.get("EVOKERNEL_KERNELBENCH")
    p = Path(env) if env else Path(__file__).resolve().parents[1] / ".." / "shared" / "benchmarks" / "kernelbench"
    return p.resolve() if (p / "level1").is_dir() and (p / "level2").is_dir() else None


KB = kernelbench_root()
needs_kernelbench = pytest.mark.skipif(KB is None, reason="KernelBench not found (set EVOKERNEL_KERNELBENCH)")
