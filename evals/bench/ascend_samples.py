"""Real Ascend C operators, as their authors wrote them, checked on ascend-sim: the fidelity table.

Each entry is an operator project of Ascend's public samples (Apache-2.0; gitee.com/ascend/samples, read
here from its GitHub copy By-gitee/opDev at a pinned commit), imported unchanged by `evokernel ascend
import` (json, tiling header, host and kernel sources byte for byte; binding and ModelNew generated) and
verified against a PyTorch task at the sizes the sample's tiling is written for. The sources are never
copied into this repository: they are read from a checkout or a bare git mirror of that repository.

    python -m evokernel.evals.bench.ascend_samples --samples PATH   # a clone (or bare mirror) of the samples
    python -m evokernel.evals.bench.ascend_samples --fetch          # git clone --filter=blob:none it first

prints one row per operator: edits to the sources (none), verdict, modelled latency, the emulator's
warnings, and what the row shows (docs/ascend-sim.md, "Real operators as written").
"""
from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "evokernel" / "suites"
REAL_OPS = ROOT / "tests" / "verifier" / "ascend" / "real_ops"  # tasks written for samples no suite task matches
SAMPLES_REPO = "https://github.com/By-gitee/opDev"  # a copy of gitee.com/ascend/samples (Apache-2.0)
SAMPLES_COMMIT = "25e8db87c0d04ac2319f30abdaa90728175418c8"
DEFAULT_MIRROR = Path("/work/.mirror/By-gitee+opDev/repo")


@dataclass(frozen=True)
class Sample:
    name: str
    path: str  # the op project in the samples repository
    task: Path
    sizes: dict[str, Any] = field(default_factory=dict)
    expect: str = "feasible"  # or the failing gate the hardware's behaviour gives
    note: str = ""
    project: str = ""  # the op project's folder inside path, when path holds several (they share its json)
    out_shape: str = ""  # the output's sizes for the generated binding when not the first input's (C++ braced list)


SAMPLES = [
    Sample("gelu", "operator_contrib/GeluSample/FrameworkLaunch", SUITES / "npu_l1" / "05_gelu_tanh.py",
           expect="correctness",
           note="tanh-form GELU through Exp and Div, fp32 of its fp16/fp32 OpDef, with the cubic's constant 0.0455399 "
                "where the tanh form has 0.044715: 3.2e-4 off norm-wise, inside the paper's 1e-2 elementwise but not "
                "float32-accurate (refused since 2026-11-28, like the tanh form for the exact GELU)"),
    Sample("add_custom", "operator/ascendc/0_introduction/1_add_frameworklaunch",
           SUITES / "npu_l1" / "28_elementwise_add_fp16.py", {"batch_size": 8, "dim": 2048},
           note="8 blocks x 8 tiles x 2 buffers, fp16, at the sample's own 8 x 2048"),
    Sample("add_custom_unaligned", "operator/ascendc/0_introduction/1_add_frameworklaunch",
           SUITES / "npu_l1" / "28_elementwise_add_fp16.py", expect="runtime",
           note="the same kernel at 125 x 2003: its tiles are not 32-byte multiples; the NPU drops the tails "
                "of such DataCopys, and so does the emulator (datacopy_tail_dropped)"),
    Sample("leaky_relu_custom", "operator/ascendc/0_introduction/9_leakyrelu_frameworklaunch",
           SUITES / "npu_l1" / "02_leaky_relu.py", {"batch_size": 8, "dim": 2048},
           note="negative_slope as an op attribute (GetAttrs in TilingFunc)"),
    Sample("greater_equal", "operator_contrib/GreaterEqualSample/FrameworkLaunch", REAL_OPS / "greater_equal.py",
           note="bool output (the OpDef's; the sample's json says float); reads GlobalTensor::address_"),
    Sample("cumsum", "operator_contrib/CumsumSample/FrameworkLaunch", REAL_OPS / "cumsum.py",
           note="the axis as an int32 tensor input; scalar GetValue/SetValue loops on GM (scalar-bound, one block)"),
    Sample("layer_norm_custom", "operator_contrib/LayerNormCustomSample/FrameworkLaunch",
           REAL_OPS / "layer_norm_gamma_beta.py", note="gamma and beta as inputs, epsilon as an attribute"),
    Sample("matmul_custom_multicore", "operator/ascendc/0_introduction/10_matmul_frameworklaunch",
           REAL_OPS / "matmul_bias_fp16.py",
           project="MatmulCustomMultiCore", out_shape="{a.size(0), b.size(1)}",
           note="the high-level Matmul API (IterateAll to GM) with MultiCoreMatmulTiling on the host; a plain "
                "tiling struct (kernel_tiling.h, GetTilingData<T>, REGISTER_TILING_DEFAULT); MIX: AIC server, AIVs"),
    Sample("matmul_api_constant_custom", "operator/ascendc/2_features/14_matmul_api_constant",
           REAL_OPS / "matmul_bias_fp16.py", out_shape="{a.size(0), b.size(1)}",
           note="a compile-time constant tiling (MatmulShapeParams, GetMMConfig, GetMatmulApiTiling) in the "
                "Matmul template; the run-time TCubeTiling supplies the rest"),
    Sample("matmul_leakyrelu_custom", "operator/ascendc/0_introduction/12_matmulleakyrelu_frameworklaunch",
           REAL_OPS / "matmul_leakyrelu_fp16.py", out_shape="{a.size(0), b.size(1)}",
           note="Matmul Iterate + GetTensorC to the UB (through the GM workspace) then LeakyRelu on the AIVs; "
                "SetFixSplit(-1, 160, -1)"),
]


def extract(samples: Path, path: str, dest: Path, commit: str = SAMPLES_COMMIT) -> Path:
    """The op project ``path`` of the samples at ``commit`` under ``dest`` (from a bare mirror or a clone:
    the pinned commit, whatever is checked out; a plain directory tree without git is read as it is)."""
    samples = Path(samples)
    git_dir = samples if (samples / "HEAD").exists() else samples / ".git"
    if not git_dir.exists():  # a plain tree (a download without history): as it is
        return samples / path
    out = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, path], capture_output=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"git archive {commit} {path} in {samples}: {out.stderr.decode(errors='replace')[-500:]}")
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / path


def default_samples() -> Path | None:
    import os

    env = os.environ.get("EVOKERNEL_ASCEND_SAMPLES")
    if env:
        return Path(env)
    return DEFAULT_MIRROR if (DEFAULT_MIRROR / "HEAD").exists() else None


def check(sample: Sample, samples: Path, verifier: Any, workdir: Path) -> dict[str, Any]:
    """Import the sample unchanged, verify it; the row of the fidelity table."""
    from evokernel.ascend_import import import_project
    from evokernel.tasks.load import load_task
    from evokernel.verifier.backends.ascend_sim.project import read_strings

    project_dir = extract(samples, sample.path, workdir)
    if sample.project:
        project_dir = project_dir / sample.project
    candidate = workdir / f"{sample.name}.py"
    project, text = import_project(project_dir, candidate, sample.out_shape or None)
    # what the verifier reads from the candidate, string by string, against the files as published
    strings = read_strings(text)
    edits = sum(strings[name] != f.read_text(encoding="utf-8") for name, f in project.files.items())
    t0 = time.perf_counter()
    verdict = verifier.verify(load_task(sample.task, sample.sizes), text)
    gate = "feasible" if verdict.feasible else verdict.failed_gate
    warnings = [w for w in verdict.details.get("emulator_warnings") or []]
    return {"operator": sample.name, "op": project.op, "edits": edits, "verdict": gate, "expected": sample.expect,
            "as_expected": gate == sample.expect, "latency_us": (verdict.latency_ms or 0) * 1e3 if verdict.feasible else None,
            "warnings": len(warnings), "first_warning": warnings[0][:160] if warnings else "",
            "feedback": verdict.feedback.splitlines()[:3], "seconds": time.perf_counter() - t0,
            "sizes": sample.sizes, "task": str(sample.task.relative_to(ROOT)), "note": sample.note}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=Path, default=None, help="a clone or bare mirror of the samples repository")
    ap.add_argument("--fetch", action="store_true", help=f"git clone {SAMPLES_REPO} (blobs on demand) first")
    ap.add_argument("--only", action="append", default=[], help="operator names to check (default: all)")
    args = ap.parse_args(argv)
    samples = args.samples or default_samples()
    tmp = Path(tempfile.mkdtemp(prefix="evk-ascend-samples-"))
    if args.fetch:
        samples = tmp / "samples.git"
        subprocess.run(["git", "clone", "--bare", "--filter=blob:none", SAMPLES_REPO, str(samples)], check=True)
    if samples is None:
        print("no samples: give --samples PATH (or EVOKERNEL_ASCEND_SAMPLES), or --fetch", file=sys.stderr)
        return 2
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    rows = []
    with Verifier("ascend-sim", VerifyConfig(cache_dir=tmp / "cache", run_timeout_s=60.0)) as v:
        for s in SAMPLES:
            if args.only and s.name not in args.only:
                continue
            work = tmp / s.name
            work.mkdir()
            rows.append(check(s, samples, v, work))
            r = rows[-1]
            lat = f"{r['latency_us']:.2f} us" if r["latency_us"] is not None else "-"
            print(f"{r['operator']:22s} {r['op']:18s} edits {r['edits']}  {r['verdict']:10s} "
                  f"{'as expected' if r['as_expected'] else 'NOT AS EXPECTED':15s} {lat:>10s}  warnings {r['warnings']}",
                  flush=True)
    bad = [r for r in rows if not r["as_expected"] or r["edits"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} as expected with no edit to the operator's sources")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
