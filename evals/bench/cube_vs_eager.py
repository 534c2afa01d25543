"""Modelled latency vs modelled eager for the Ascend template's matmul and convolution kernels on ascend-sim.

    python -m evals.bench.cube_vs_eager [--kernelbench /work/shared/benchmarks/kernelbench] [--tasks 31,36]

One row per task: the conservative schedule (base 64 x 64 x 32, one buffer: the draft before issue 33), the
tuned one (base_k 128, two buffers), the draft the generator writes now (base block and buffering picked by the
modelled cube/MTE balance, ``gemm/balance.py``; for a convolution also ``conv_algo``: the LoadData-3D kernel,
``conv/l1_img2col.py``, where its model beats the GM im2col's) and the best of the three, each as the latency model's estimate
in us, with the eager estimate of the same verdict and the ratio eager / kernel (>= 1: the kernel models faster
than eager). Geomeans per category at the end. Every number is modelled by ascend-sim's latency model, not measured on a device.
"""
from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

SUITES = Path(__file__).resolve().parents[2] / "evokernel" / "suites"
MATMUL = ["npu_l1/31_matmul_fp16.py", "npu_l1/32_matmul_bt_fp32.py", "npu_l1/33_matmul_large_k_fp16.py",
          "npu_l1/34_matmul_tall_skinny_fp16.py", "npu_l1/35_batched_matmul_fp16.py"]
FUSIONS = [f"npu_l2/{n}" for n in ("12_linear_relu.py", "13_linear_gelu.py", "14_linear_scale_residual.py",
                                   "15_linear_softmax.py", "16_matmul_logsumexp_fp16.py", "17_linear_layernorm.py",
                                   "18_linear_swish_rowsum.py", "19_linear_groupnorm.py", "20_linear_batchnorm.py",
                                   "21_linear_avgpool.py")]
CONV = ["npu_l1/36_conv2d_3x3.py", "npu_l1/37_conv2d_pointwise.py", "npu_l1/39_conv1d.py"]
KB = ["level1/7_Matmul_with_small_K_dimension_.py", "level1/8_Matmul_with_irregular_shapes_.py",
      "level1/17_Matmul_with_transposed_B.py", "level1/55_conv_standard_2D__asymmetric_input__square_kernel.py",
      "level1/63_conv_standard_2D__square_input__square_kernel.py", "level1/87_conv_pointwise_2D.py"]
TUNED = {"base_k": 128, "buffer_num": 2}


def _one(gen, verifier, task, op, family, knobs):
    from evokernel.generators.template.ascend import schedules as AS
    sched = AS.make_schedule(family, {**AS.CONSERVATIVE, **knobs}, "x")
    source, _, geo = gen.render_ascend(task, op, sched)
    if geo is None:
        return None, None, "no geometry"
    v = verifier.verify(task, source)
    est = (v.details or {}).get("estimate") or {}
    if not v.feasible:
        return None, est.get("eager_us"), v.feedback.splitlines()[0][:80] if v.feedback else "infeasible"
    return v.latency_ms * 1000.0, est.get("eager_us"), (geo or {}).get("lowering", "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", type=Path, help="KernelBench root: add a few level-1 matmul/conv files, fitted")
    ap.add_argument("--tasks", default="", help="comma-separated npu_l1 task numbers (default: all)")
    ap.add_argument("--only-kernelbench", action="store_true", help="skip the npu_l1 tasks")
    ap.add_argument("--fusions", action="store_true", help="add npu_l2 12-21 (a matmul and what follows it)")
    a = ap.parse_args(argv)
    from evokernel.generators.base import GenerationError
    from evokernel.generators.template import TemplateGenerator
    from evokernel.generators.template.ascend import schedules as AS
    from evokernel.generators.template.generator import ascend_op_for
    from evokernel.tasks.fit import fit_task
    from evokernel.tasks.load import load_task
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    want = {t.strip() for t in a.tasks.split(",") if t.strip()}
    paths = [(SUITES / p, p) for p in MATMUL + CONV
             if not a.only_kernelbench and (not want or p.split("/")[1].split("_")[0] in want)]
    if a.fusions:
        paths += [(SUITES / p, p) for p in FUSIONS]
    if a.kernelbench:
        paths += [(a.kernelbench / p, "kb/" + p) for p in KB]
    gen = TemplateGenerator()
    ratios: dict[str, list[float]] = {f"{k}{d}": [] for d in ("", " draft") for k in ("matmul", "conv", "fusion")}
    with tempfile.TemporaryDirectory() as tmp:
        verifier = Verifier("ascend-sim", VerifyConfig(cache_dir=Path(tmp), run_timeout_s=120.0)).start()
        try:
            print("| task | conservative us | tuned us | draft (modelled pick) us | best us | eager us | eager / draft | "
                  "eager / best | pick |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
            for path, name in paths:
                task = load_task(path)
                if name.startswith("kb/"):
                    task = fit_task(task, "ascend-sim")
                kind = "conv" if "conv" in name else "fusion" if "npu_l2" in name else "matmul"
                family = "ascend_conv" if kind == "conv" else "ascend_cube"
                try:
                    op = ascend_op_for(task)
                except GenerationError as exc:
                    print(f"| {name} | refused: {str(exc).split(': ', 2)[-1][:90]} | | | | | |", flush=True)
                    continue
                d, e1, n1 = _one(gen, verifier, task, op, family, {})
                t, e2, n2 = _one(gen, verifier, task, op, family, TUNED)
                pick = AS.draft_knobs(op)
                p, e3, _ = _one(gen, verifier, task, op, family, pick)
                eager = e1 or e2 or e3
                got = [x for x in (d, t, p) if x is not None]
                best = min(got) if got else None
                f = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
                r = eager / best if best and eager else None
                rp = eager / p if p and eager else None
                if r:
                    ratios[kind].append(r)
                if rp:
                    ratios[kind + " draft"].append(rp)
                pk = "/".join(str(pick.get(k, "")) for k in ("base_m", "base_n", "base_k", "buffer_num"))
                if pick.get("conv_algo") == "l1_img2col":  # the LoadData-3D convolution (conv/l1_img2col.py)
                    pk += " l1_img2col"
                g = lambda x: "-" if x is None else f"{x:.2f}x"  # noqa: E731
                print(f"| {name} | {f(d)} | {f(t)} | {f(p)} | {f(best)} | {f(eager)} | {g(rp)} | {g(r)} | {pk} "
                      f"{n1 if n1 == n2 else n1 + ' / ' + n2} |", flush=True)
        finally:
            verifier.close()
    for k, v in ratios.items():
        if v:
            print(f"\n{k}: geomean eager/kernel {math.exp(sum(map(math.log, v)) / len(v)):.2f}x over {len(v)} tasks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
