"""Modelled latency of the template's two convolution lowerings on ascend-sim (vector: the direct convolution of
``ascend/conv/direct.py``; cube: the implicit GEMM of ``ascend/conv/implicit_gemm.py``), draft and best refinement, per conv task.

    python -m evokernel.evals.bench.conv_lowerings [--steps 6] [--tasks npu_l1/36_conv2d_3x3.py ...]
    python -m evokernel.evals.bench.conv_lowerings --kernelbench /work/shared/benchmarks/kernelbench   # level-1 convs

The refinement is a hill climb with the template generator's own refine step: from the best feasible kernel so
far, ask for a refinement (the transforms already tried from it are its children), verify, keep it when faster;
``--steps`` verifications per lowering. A refinement that switches the lowering is skipped (counted as tried),
so each column stays one lowering. Every number is the latency model's estimate, not a measurement.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

SUITE = ["npu_l1/36_conv2d_3x3.py", "npu_l1/37_conv2d_pointwise.py", "npu_l1/38_conv2d_depthwise.py",
         "npu_l1/39_conv1d.py"]


def _verify(verifier: Any, task: Any, source: str) -> float | None:
    v = verifier.verify(task, source)
    return v.latency_ms * 1000 if v.feasible and v.latency_ms else None


def lowering_run(gen: Any, verifier: Any, task: Any, lowering: str, steps: int) -> dict[str, Any]:
    """Draft and hill-climbed best of one lowering: {'draft_us', 'best_us', 'best' (its knobs), 'used'}."""
    from evokernel.generators.base import ContextItem, GenerationRequest
    from evokernel.generators.template.ascend import schedules as AS
    from evokernel.generators.template.front.search import knobs_of
    from evokernel.generators.template.generator import ascend_op_for

    op = ascend_op_for(task)
    sched = AS.make_schedule("ascend_conv", {**AS.CONSERVATIVE, "lowering": lowering}, "draft")
    source, _, geo = gen.render_ascend(task, op, sched)
    used = (geo or {}).get("lowering", "?")
    draft = _verify(verifier, task, source)
    best, best_sched, best_src = draft, sched, source
    children: list[Any] = []
    for step in range(steps if draft is not None else 0):
        start = ContextItem(id=f"b{step}", kind="trace", text=best_src, meta={"schedule": best_sched, "feasible": True})
        try:
            r = gen.generate(GenerationRequest(task=task, stage="refine", backend="ascend-sim", seed=step,
                                               start_point=start, children=children))
        except Exception:  # noqa: BLE001 -- no untried schedule left
            break
        child = ContextItem(id=f"c{step}", kind="trace", text=r.source, meta={"schedule": r.schedule})
        if r.schedule.get("lowering", lowering) != lowering:
            children.append(child)
            continue
        lat = _verify(verifier, task, r.source)
        if lat is not None and lat < best:
            best, best_sched, best_src, children = lat, r.schedule, r.source, []
        else:
            children.append(child)
    return {"draft_us": draft, "best_us": best, "best": knobs_of(best_sched), "used": used}


def eager_us(verifier: Any, task: Any, source: str) -> float | None:
    v = verifier.verify(task, source)
    est = (v.details or {}).get("estimate") or {}
    return est.get("eager_us")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="*", default=SUITE, help="suite-relative task paths")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--kernelbench", type=Path, help="KernelBench root: one draft per level-1 conv, vector vs cube")
    a = p.parse_args(argv)
    from evokernel.generators.template import TemplateGenerator
    from evokernel.tasks.load import load_task
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    gen = TemplateGenerator()
    cache = Path.home() / ".cache" / "evokernel" / "conv_lowerings"
    verifier = Verifier("ascend-sim", VerifyConfig(cache_dir=cache, run_timeout_s=120.0)).start()
    try:
        if a.kernelbench:
            return _kernelbench(gen, verifier, a.kernelbench)
        suites = Path(__file__).resolve().parents[2] / "evokernel" / "suites"
        print("| task | lowering used | vector draft us | vector best us | cube draft us | cube best us (knobs) | "
              "eager us | best cube vs eager |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for path in a.tasks:
            task = load_task(suites / path)
            vec = lowering_run(gen, verifier, task, "vector", a.steps)
            cube = lowering_run(gen, verifier, task, "cube", a.steps)
            from evokernel.generators.template.ascend import schedules as AS
            from evokernel.generators.template.generator import ascend_op_for

            src = gen.render_ascend(task, ascend_op_for(task), AS.make_schedule("ascend_conv", dict(AS.CONSERVATIVE),
                                                                                 "draft"))[0]
            eager = eager_us(verifier, task, src)
            f = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
            knobs = ", ".join(f"{k}={cube['best'][k]}" for k in ("base_m", "base_n", "base_k", "buffer_num"))
            ratio = f"{eager / cube['best_us']:.2f}x" if eager and cube["best_us"] else "-"
            print(f"| {path} | {cube['used']} | {f(vec['draft_us'])} | {f(vec['best_us'])} | {f(cube['draft_us'])} | "
                  f"{f(cube['best_us'])} ({knobs}) | {f(eager)} | {ratio} |")
            sys.stdout.flush()
    finally:
        verifier.close()
    return 0


def _kernelbench(gen: Any, verifier: Any, root: Path) -> int:
    """One draft per KernelBench level-1 conv file (fitted to ascend-sim), with each lowering."""
    from evokernel.generators.base import GenerationError
    from evokernel.generators.template.ascend import schedules as AS
    from evokernel.generators.template.generator import ascend_op_for
    from evokernel.tasks.fit import fit_task
    from evokernel.tasks.load import load_task

    files = sorted((root / "level1").glob("*_conv*.py"), key=lambda q: int(q.name.split("_")[0]))
    print("| file | vector draft us | cube draft us (used) | eager us | vector vs eager | cube vs eager |")
    print("|---|---:|---:|---:|---:|---:|")
    feas = {"vector": 0, "cube": 0}
    for f in files:
        task = fit_task(load_task(f), "ascend-sim")
        try:
            op = ascend_op_for(task)
        except GenerationError as exc:
            print(f"| {f.name} | refused: {str(exc).split(': ', 1)[-1][:70]} | | | | |")
            continue
        row: dict[str, Any] = {}
        eager = None
        for low in ("vector", "cube"):
            src, _, geo = gen.render_ascend(task, op, AS.make_schedule("ascend_conv",
                                                                        {**AS.CONSERVATIVE, "lowering": low}, "draft"))
            if geo is None:
                row[low] = (None, "no tiling")
                continue
            v = verifier.verify(task, src)
            lat = v.latency_ms * 1000 if v.feasible and v.latency_ms else None
            eager = eager or ((v.details or {}).get("estimate") or {}).get("eager_us")
            row[low] = (lat, geo.get("lowering", low) if lat is not None else v.feedback.splitlines()[0][:60])
            feas[low] += lat is not None
        ff = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
        sp = lambda x: f"{eager / x:.2f}x" if x and eager else "-"  # noqa: E731
        print(f"| {f.name} | {ff(row['vector'][0])} | {ff(row['cube'][0])} ({row['cube'][1]}) | {ff(eager)} | "
              f"{sp(row['vector'][0])} | {sp(row['cube'][0])} |")
        sys.stdout.flush()
    print(f"\nfeasible drafts: vector lowering {feas['vector']}, cube lowering (cube where it applies) {feas['cube']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
