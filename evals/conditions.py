"""The conditions every reported number depends on, recorded when an evaluation starts.

Peers' numbers differ in baseline, aggregation, tolerance and hardware (see docs/metrics.md), so
each summary states them: correctness tolerance, timing protocol, what a speedup is relative to,
how results are aggregated, and the machine and software that produced them.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
from importlib import metadata
from typing import Any

from evokernel.verifier.backends.registry import spec

PACKAGES = ("evokernel", "torch", "numpy", "langgraph", "langchain-core", "langchain-openai", "chromadb",
            "sentence-transformers", "matplotlib")


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "not installed"


def _first_line(cmd: list[str]) -> str:
    if not shutil.which(cmd[0]):
        return "not found"
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def hardware() -> str:
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f", {int(line.split()[1]) / 2**20:.0f} GiB RAM"
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} usable core(s){mem}, {platform.system()} {platform.release()}; no GPU/NPU used"


def software() -> dict[str, str]:
    out = {"python": platform.python_version()}
    out.update({p: _version(p) for p in PACKAGES})
    out["g++"] = _first_line(["g++", "--version"])
    out["bubblewrap"] = _first_line(["bwrap", "--version"])
    return out


def protocol(strict: bool, backend: str) -> dict[str, str]:
    """How verdicts and latencies are produced (the verifier's defaults, which the eval does not change)."""
    from evokernel.verifier.trusted.correctness import DEFAULT_TOL, F64_SCALE, STRICT_TOL
    from evokernel.verifier.trusted.verifier import VerifyConfig

    c = VerifyConfig()
    tol = STRICT_TOL if strict else DEFAULT_TOL
    return {
        "backend": backend,
        "tolerance": f"atol = rtol = {tol:g} ({'strict' if strict else 'the paper'}'s setting) on float32 outputs "
                     f"(float64: {tol * F64_SCALE:g}; half precision: never below one eps) on {c.trials} random "
                     f"trials plus {len(c.perturbations)} perturbed ones"
                     + (" and one with the models' constant initialisers drawn at random" if c.perturbed_parameters
                        else "") + "; NaN/Inf must match position by position",
        "timing": f"{c.warmup} warm-up calls, then {c.min_rounds}-{c.max_rounds} interleaved rounds of candidate and "
                  f"eager reference in random order with fresh inputs, {c.threads} thread(s) each side; "
                  f"latency = median over rounds",
        "speedup_base": "within-operator speedup: first feasible kernel's latency / best latency (the paper's); "
                        "speedup vs eager: PyTorch eager reference timed in the same rounds, median of per-round "
                        "ratios, of each operator's best kernel",
        "aggregation": "within-operator speedup: median and IQR (linear interpolation) over operators with at least "
                       "two timed feasible kernels; speedup vs eager: geometric mean over solved operators; fast_p: "
                       "share of all operators; across seeds: mean and sample standard deviation",
    }


def modelled_protocol(backend: str) -> dict[str, str]:
    """The latency lines for a backend that models latency instead of timing it (ascend-sim)."""
    from evokernel.verifier.backends.ascend_sim.hardware import Ascend910B

    hw = Ascend910B()
    return {
        "timing": f"MODELLED, not measured: the {backend} latency model of {hw.name} ({hw.aiv_cores} AIV cores, "
                  f"{hw.clock_hz / 1e9:g} GHz, HBM {hw.hbm_bytes_per_s / 1e12:g} TB/s, launch {hw.launch_us:g} us) "
                  "over the emulator's per-block pipe schedule of the first correctness trial; deterministic",
        "speedup_base": "within-operator speedup: first feasible kernel's estimate / best estimate (the paper's "
                        "ratio, on estimates); speedup vs eager: the modelled eager reference (one NPU kernel per "
                        "ATen operator of the reference, same constants) / the best kernel's estimate",
    }


def collect(strict: bool, backend: str) -> dict[str, Any]:
    out: dict[str, Any] = protocol(strict, backend)
    if spec(backend).timing == "model":
        out.update(modelled_protocol(backend))
    out["hardware"] = hardware()
    out["software"] = software()
    return out
