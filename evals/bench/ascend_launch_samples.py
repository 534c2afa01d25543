"""Ascend's kernel-launch samples (a kernel .cpp and an ACL main()), compiled unchanged against ascend-sim.

The op-project samples go through `evokernel ascend import` and the verifier (evals/bench/ascend_samples.py). The
kernel-launch ones have no op project to import: their kernel file (and the headers it includes) is
compiled as published, their host main() (ACL runtime, tikicpulib) is replaced by the emulator's
launcher, and the kernel runs with the block count, buffers and sizes their main() uses, on inputs made
here; the output is compared with numpy. Sources are read in place from the samples mirror (as in
evals/bench/ascend_samples.py), never copied into this repository.

    python -m evokernel.evals.bench.ascend_launch_samples [--samples PATH]

prints one row per sample: findings of the emulator, match with numpy, modelled latency.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evokernel.evals.bench.ascend_samples import SAMPLES_COMMIT, default_samples, extract

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "verifier" / "backends" / "ascend_sim"
CXX = os.environ.get("CXX", "g++")
CXXFLAGS = ["-std=c++17", "-O1", "-Werror=narrowing"]


@dataclass(frozen=True)
class LaunchSample:
    name: str
    path: str                 # the sample's folder in the samples repository
    source: str               # its kernel file
    kernel: str               # the extern "C" kernel
    order: tuple[int, ...]    # kernel argument i is launcher buffer order[i] (inputs first, then outputs)
    block_dim: int
    make: Callable[[np.random.Generator], tuple[list[np.ndarray], list[np.ndarray]]]  # -> inputs, expected outputs
    tol: float = 0.0          # max abs error accepted (0: bit-exact)
    what: str = ""
    # samples whose main() builds a tiling on the host: the sample's tiling file (its GenerateTiling(soc, buf),
    # compiled unchanged against our tiling API), the bytes main() copies beyond sizeof(TCubeTiling), and the
    # workspace it allocates; block_dim may then be a function of the TCubeTiling fields (main() reads usedCoreNum)
    tiling: str = ""
    tiling_extra: int = 0
    workspace: int = 0
    blocks: Callable[[dict[str, int]], int] | None = None
    rtol: float = 0.0         # relative error accepted on top of tol (|out - want| <= tol + rtol * |want|)


def _mmad(bias: bool):
    def make(rng: np.random.Generator):
        a = rng.uniform(-1, 1, (32, 32)).astype(np.float16)
        b = rng.uniform(-1, 1, (32, 32)).astype(np.float16)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        ins = [a, b]
        if bias:
            v = rng.uniform(-1, 1, 32).astype(np.float16)
            ins.append(v)
            ref = ref + v.astype(np.float64)
        return ins, [ref.astype(np.float32)]
    return make


def _abs_gather_mask(rng: np.random.Generator):
    x = rng.uniform(-1, 1, 2318).astype(np.float16)  # its main() allocates 2304 + 32 - 18 elements
    return [x], [np.abs(x[:2304])]


def _reduce_min(rng: np.random.Generator):
    x = rng.uniform(-8, 8, 76).astype(np.float16)
    x[64:] = 0
    want = np.zeros(76, np.float16)
    for g in range(16):  # 16 groups of 4 halves: the min lands on the group's first position
        want[4 * g] = x[4 * g:4 * g + 4].min()
    return [x, np.zeros(32, np.int32)], [want]


def _abs_duplicate(rng: np.random.Generator):
    x = rng.uniform(-8, 8, 709).astype(np.float16)
    want = np.abs(x)
    want[704:] = 0  # 4 blocks x 16 rows of 11; the last block's output runs 5 zeros past the 704 it computes
    return [x, np.zeros(32, np.int32)], [want]


def _matmul(rng: np.random.Generator):
    a = rng.uniform(-1, 1, (512, 512)).astype(np.float16)
    b = rng.uniform(-1, 1, (512, 1024)).astype(np.float16)
    return [a, b], [(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)]


def _baremix(rng: np.random.Generator):
    # its gen_data.py: integers in [-10, 10), a bias in [1, 10), LeakyRelu with alpha 0.001
    a = rng.integers(-10, 10, (128, 256)).astype(np.float16)
    b = rng.integers(-10, 10, (256, 128)).astype(np.float16)
    bias = rng.integers(1, 10, 128).astype(np.float32)
    c = a.astype(np.float64) @ b.astype(np.float64) + bias
    return [a, b, bias], [np.where(c >= 0, c, c * 0.001).astype(np.float32)]


# the TCubeTiling fields in SaveToBuffer's order (kernel_tiling/kernel_tiling.h)
TILING_FIELDS = ("usedCoreNum M N Ka Kb singleCoreM singleCoreN singleCoreK baseM baseN baseK depthA1 depthB1 stepM "
                 "stepN isBias transLength iterateOrder shareMode shareL1Size shareL0CSize shareUbSize").split()
SYS_WORKSPACE = 16 * 1024 * 1024  # GetLibApiWorkSpaceSize() of an Ascend910B

INTRO = "operator/ascendc/0_introduction"
LAUNCH_SAMPLES = [
    LaunchSample("mmad", f"{INTRO}/20_mmad_kernellaunch/MmadInvocation", "mmad_custom.cpp", "mmad_custom",
                 (0, 1, 2), 1, _mmad(False), 1e-5, "raw cube: ND2NZ, LoadData (B transposed), Mmad, Fixpipe"),
    LaunchSample("mmad_bias", f"{INTRO}/20_mmad_kernellaunch/MmadBiasInvocation", "mmad_custom.cpp", "mmad_custom",
                 (0, 1, 2, 3), 1, _mmad(True), 1e-5, "the same with a half bias through L1 and the bias table"),
    LaunchSample("abs_gather_mask", f"{INTRO}/16_unaligned_abs_kernellaunch/AbsGatherMaskKernelInvocation",
                 "abs_gather_mask.cpp", "abs_gather_mask_custom", (0, 1), 8, _abs_gather_mask, 0.0,
                 "rows of 18 halves: GatherMask picks the 16-element tail"),
    LaunchSample("reduce_min", f"{INTRO}/17_unaligned_reducemin_kernellaunch/ReduceMinKernelInvocation",
                 "reduce_min.cpp", "reduce_min_custom", (0, 2, 1), 4, _reduce_min, 0.0,
                 "Fill, SyncAll(gm, ub), then atomic adds into the neighbour's part"),
    LaunchSample("abs_duplicate", f"{INTRO}/16_unaligned_abs_kernellaunch/AbsDuplicateKernelInvocation",
                 "abs_duplicate.cpp", "abs_duplicate_custom", (0, 2, 1), 4, _abs_duplicate, 0.0,
                 "Duplicate clears the row padding; Fill, SyncAll, atomic adds"),
    LaunchSample("matmul", f"{INTRO}/11_matmul_kernellaunch/MatmulInvocationNeo", "matmul_custom.cpp",
                 "matmul_custom", (0, 1, 2, 3, 4), 0, _matmul, 1e-3,
                 "Matmul API (MIX, 512x1024x512 over the cores MultiCoreMatmulTiling picks); the tiling is "
                 "copied through a raw __gm__ pointer", tiling="matmul_custom_tiling.cpp",
                 tiling_extra=8, workspace=SYS_WORKSPACE,
                 blocks=lambda t: (t["usedCoreNum"] + 1) // 2, rtol=1e-3),
    LaunchSample("baremix", f"{INTRO}/22_baremix_kernellaunch/BareMixInvocation", "baremix_custom.cpp",
                 "baremix_custom", (0, 1, 2, 3, 4, 5), 1, _baremix, 1e-3,
                 "MIX 1:2: the AIC's Matmul API (bias) signals CrossCoreSetFlag<2>; each AIV applies LeakyRelu "
                 "to its half of C in place", tiling="baremix_custom_tiling.cpp",
                 workspace=SYS_WORKSPACE, rtol=1e-5),
]
BY_NAME = {s.name: s for s in LAUNCH_SAMPLES}


def _gxx(args: list[str], cwd: Path) -> None:
    r = subprocess.run([CXX, *CXXFLAGS, f"-I{SIM / 'include'}", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"g++ failed: {r.stderr[-3000:]}")


def runtime_object(workdir: Path) -> Path:
    obj = workdir / "evk_runtime.o"
    if not obj.exists():
        _gxx(["-c", str(SIM / "runtime.cpp"), "-o", str(obj)], workdir)
    return obj


def host_tiling(sample: LaunchSample, src: Path, d: Path, workdir: Path) -> tuple[Path, dict[str, int]]:
    """Run the sample's own GenerateTiling (its tiling file, unchanged) into a file of the bytes main() copies."""
    (d / "gen_tiling.cpp").write_text(
        "#include <cstdio>\n#include <cstdint>\n#include \"kernel_tiling/kernel_tiling.h\"\n"
        "void GenerateTiling(const char*, uint8_t*);\n"
        "int main(int, char** argv) { static uint8_t buf[4096] = {}; GenerateTiling(\"Ascend910B1\", buf);\n"
        f"  FILE* f = std::fopen(argv[1], \"wb\"); std::fwrite(buf, 1, sizeof(TCubeTiling) + {sample.tiling_extra}, f);\n"
        "  std::fclose(f); return 0; }\n")
    _gxx([f"-I{src}", str(src / sample.tiling), "gen_tiling.cpp", str(runtime_object(workdir)), "-o", "gen_tiling"], d)
    out = d / "tiling.bin"
    subprocess.run([str(d / "gen_tiling"), str(out)], check=True, timeout=60, capture_output=True)
    words = np.fromfile(out, dtype=np.int32)
    return out, dict(zip(TILING_FIELDS, (int(w) for w in words[: len(TILING_FIELDS)])))


def check_launch(sample: LaunchSample, samples: Path, workdir: Path, seed: int = 0) -> dict[str, Any]:
    """Compile the sample's kernel unchanged, run it on the emulator and compare with numpy: one row."""
    from evokernel.verifier.backends.ascend_sim.build import kernel_cores
    from evokernel.verifier.backends.ascend_sim.latency_model import estimate_kernel

    d = workdir / sample.name
    d.mkdir(parents=True, exist_ok=True)
    src = extract(samples, sample.path, d / "sample")
    ins, want = sample.make(np.random.default_rng(seed))
    tiling_file, fields = host_tiling(sample, src, d, workdir) if sample.tiling else (None, {})
    block_dim = sample.blocks(fields) if sample.blocks else sample.block_dim
    n_args = len(ins) + len(want) + (1 if sample.workspace else 0) + (1 if tiling_file else 0)
    params = ", ".join("unsigned char*" for _ in range(n_args))
    names = [f"p{i}" for i in range(n_args)]
    (d / "launch_main.cpp").write_text(
        '#include "evk_sim/runtime.h"\n'
        f'extern "C" void {sample.kernel}({params});\n'
        f'extern "C" void evk_launch_in_order({", ".join(f"unsigned char* {n}" for n in names)}) '
        f'{{ {sample.kernel}({", ".join(names[i] for i in sample.order)}); }}\n'
        "int main(int argc, char** argv) { return evk_sim_launch_main(argc, argv, "
        "(evk_kernel_fn)&evk_launch_in_order); }\n")
    exe = d / "prog"
    # the cores the kernel runs on, as the device compiler tells them from its code (build.py: kernel_cores)
    cores = kernel_cores((src / sample.source).read_text(errors="replace"))
    _gxx([f"-I{src}", *([f"-DEVK_SIM_MIX={cores}"] if cores else []), str(src / sample.source), "launch_main.cpp",
          str(runtime_object(workdir)), "-rdynamic", "-o", str(exe)], d)
    args = [str(exe), "--block-dim", str(block_dim), "--report", str(d / "report.json")]
    for i, a in enumerate(ins):
        np.ascontiguousarray(a).tofile(d / f"in{i}.bin")
        args += ["--in", str(d / f"in{i}.bin")]
    for i, w in enumerate(want):
        args += ["--out", f"{d / f'out{i}.bin'}:{w.nbytes}"]
    if sample.workspace:
        args += ["--workspace", str(sample.workspace)]
    if tiling_file is not None:
        args += ["--tiling", str(tiling_file)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    report = json.loads((d / "report.json").read_text()) if (d / "report.json").exists() else {}
    outs = [np.fromfile(d / f"out{i}.bin", dtype=w.dtype).reshape(w.shape) if (d / f"out{i}.bin").exists() else None
            for i, w in enumerate(want)]
    err = max((float(np.max(np.abs(o.astype(np.float64) - w.astype(np.float64)))) if o is not None else float("inf"))
              for o, w in zip(outs, want))
    # a relative part for outputs far from 1 (matmuls of integers): the excess over tol + rtol * |want|
    excess = max((float(np.max(np.abs(o.astype(np.float64) - w.astype(np.float64))
                               - sample.rtol * np.abs(w.astype(np.float64)))) if o is not None else float("inf"))
                 for o, w in zip(outs, want))
    findings = sorted({(v["rule"], v["severity"]) for v in report.get("violations", [])})
    errors = [f for f in findings if f[1] != "warning"]
    est = estimate_kernel(report) if report.get("blocks") else None
    match = excess <= sample.tol
    return {"sample": sample.name, "path": sample.path, "edits": 0, "rc": r.returncode, "block_dim": block_dim,
            "cores": cores, "match": match, "max_abs_error": err, "findings": findings,
            "verdict": "passes" if r.returncode == 0 and not errors and match else "fails",
            "latency_us": round(est.us, 2) if est else None, "what": sample.what, "report": report}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, help="a clone or bare mirror of the samples repository "
                    f"(commit {SAMPLES_COMMIT[:12]}); default: EVOKERNEL_ASCEND_SAMPLES or the local mirror")
    a = ap.parse_args(argv)
    samples = a.samples or default_samples()
    if samples is None:
        print("no samples mirror: pass --samples PATH (python -m evokernel.evals.bench.ascend_samples --fetch clones it)",
              file=sys.stderr)
        return 2
    print("| sample | edits | verdict | max abs error vs numpy | modelled latency | findings | what it shows |")
    print("|---|---:|---|---:|---:|---|---|")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for s in LAUNCH_SAMPLES:
            row = check_launch(s, samples, Path(tmp))
            bad += row["verdict"] != "passes"
            found = ", ".join(f"{r} ({sev})" for r, sev in row["findings"]) or "none"
            lat = f"{row['latency_us']:.2f} us" if row["latency_us"] is not None else "-"
            print(f"| {s.name} (`{s.path.split('/')[-1]}`) | 0 | {row['verdict']} | {row['max_abs_error']:.3g} | "
                  f"{lat} | {found} | {s.what} |")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
