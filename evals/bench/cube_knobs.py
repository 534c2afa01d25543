"""The cube template's matmul knobs on the npu suites' matmuls: modelled latency (ascend-sim) of the draft schedule,
of split-K and L1-resident A on top of it and of a tuned base (base_k 128, double-buffered), and what the template
generator's own refinement (no memory, seed 0) reaches from the draft in a few steps.

    python -m evals.cube_knobs [--refine 6] [--tasks 31,33]

Every number is the latency model's (not a device's). A dash: the knob does not apply (no geometry: a batch, a
row program, L1 overflow). The refinement column is a greedy walk: each step asks the generator for a refinement
of the best kernel so far (its children so far passed along, as the search loop does), verifies it, and keeps
it when faster; the transforms it kept are listed.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from evokernel.generators.base import ContextItem, GenerationError, GenerationRequest
from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.front.search import knobs_of
from evokernel.generators.template.generator import ascend_op_for
from evokernel.tasks.load import load_task
from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

SUITES = Path(__file__).resolve().parents[2] / "evokernel" / "suites"
TASKS = ["npu_l1/31_matmul_fp16.py", "npu_l1/32_matmul_bt_fp32.py", "npu_l1/33_matmul_large_k_fp16.py",
         "npu_l1/34_matmul_tall_skinny_fp16.py", "npu_l1/35_batched_matmul_fp16.py", "npu_l2/12_linear_relu.py",
         "npu_l2/13_linear_gelu.py", "npu_l2/14_linear_scale_residual.py", "npu_l2/15_linear_softmax.py",
         "npu_l2/16_matmul_logsumexp_fp16.py", "npu_l2/17_linear_layernorm.py", "npu_l2/18_linear_swish_rowsum.py"]
TUNED = {"base_k": 128, "buffer_num": 2}
COLUMNS = [("draft", {}), ("split_k 2", {"split_k": 2}), ("split_k 4", {"split_k": 4}), ("a_resident", {"a_resident": True}),
           ("tuned", TUNED), ("tuned+split 2", {**TUNED, "split_k": 2}), ("tuned+split 4", {**TUNED, "split_k": 4}),
           ("tuned+a_res", {**TUNED, "a_resident": True})]


def latency(gen, verifier, task, op, knobs) -> float | None:
    sched = AS.make_schedule("ascend_cube", {**AS.CONSERVATIVE, **knobs}, "x")
    source, _, geo = gen.render_ascend(task, op, sched)
    if geo is None:
        return None
    v = verifier.verify(task, source)
    if not v.feasible:
        raise SystemExit(f"{task.name} {knobs}: infeasible: {v.feedback[:400]}")
    return v.latency_ms * 1000.0


def refine(gen, verifier, task, op, steps: int) -> tuple[float, list[str]]:
    best = AS.make_schedule("ascend_cube", dict(AS.CONSERVATIVE), "draft")
    best_us = latency(gen, verifier, task, op, knobs_of(best))
    kept: list[str] = []
    children: list[ContextItem] = []
    for i in range(steps):
        sp = ContextItem("start", "trace", "", {"schedule": json.dumps(best), "feasible": True})
        req = GenerationRequest(task=task, stage="refine", backend="ascend-sim", seed=i, start_point=sp,
                                children=list(children))
        try:
            g = gen.generate(req)
        except GenerationError:
            break
        v = verifier.verify(task, g.source)
        us = v.latency_ms * 1000.0 if v.feasible else float("inf")
        children.append(ContextItem(f"c{i}", "trace", "", {"schedule": json.dumps(g.schedule), "feasible": v.feasible}))
        if us < best_us:
            best, best_us, children = g.schedule, us, []
            kept.append(g.schedule["transform"])
    return best_us, kept


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--refine", type=int, default=6, help="refinement steps from the draft (0: none)")
    ap.add_argument("--tasks", default="", help="comma-separated task numbers (default: all twelve)")
    args = ap.parse_args()
    want = {t.strip() for t in args.tasks.split(",") if t.strip()}
    paths = [p for p in TASKS if not want or p.split("/")[1].split("_")[0] in want]
    gen = TemplateGenerator()
    with tempfile.TemporaryDirectory() as tmp:
        verifier = Verifier("ascend-sim", VerifyConfig(cache_dir=Path(tmp), run_timeout_s=30.0)).start()
        try:
            head = ["task"] + [c for c, _ in COLUMNS] + (["refined", "kept transforms"] if args.refine else [])
            print("| " + " | ".join(head) + " |")
            print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1 - bool(args.refine)) + (["---"] if args.refine else [])) + "|")
            for path in paths:
                task = load_task(SUITES / path)
                op = ascend_op_for(task)
                cells = []
                for _, knobs in COLUMNS:
                    us = latency(gen, verifier, task, op, knobs)
                    cells.append("-" if us is None else f"{us:.2f}")
                if args.refine:
                    us, kept = refine(gen, verifier, task, op, args.refine)
                    cells += [f"{us:.2f}", ", ".join(kept) or "-"]
                print(f"| {path.split('/')[1][:-3]} | " + " | ".join(cells) + " |", flush=True)
        finally:
            verifier.close()


if __name__ == "__main__":
    main()
