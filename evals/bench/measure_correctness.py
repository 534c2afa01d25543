"""The numbers behind the correctness gate's bounds (verifier/trusted/correctness.py, docs/verifier.md).

    python -m evokernel.evals.bench.measure_correctness f64
    python -m evokernel.evals.bench.measure_correctness perturbed /work/shared/benchmarks/kernelbench/level1 \
        /work/shared/benchmarks/kernelbench/level2
    python -m evokernel.evals.bench.measure_correctness floor /work/shared/benchmarks/kernelbench/level2/23_Conv3d_GroupNorm_Mean.py \
        --set batch_size=16 --seeds 3

``f64``: float64 operators computed by an honest double kernel in another summation order (blocked, sequential,
flipped channels) and by float32 arithmetic widened to double, on the verifier's trial inputs (none, scale,
heavy, shift): the worst elementwise error in the atol = rtol form (|d| / (1 + |r|)) and norm-wise error
against PyTorch's float64 answer. The float64 tolerance sits between the two columns.

``perturbed``: every task file under the given folders whose Model has constant initialisers (construction
with and without `drawn_constants` differs), fitted to this machine; the template generator's conservative
draft of each is verified with timing off, without and with the perturbed-parameter trial: the false
rejections the trial costs on kernels that build the task's own layers.

``floor``: the template generator's draft of a task, run in this process beside PyTorch on the trial inputs
(default parameters, then constant initialisers drawn as in the perturbed-parameter trial), each output's
distance from the float64 answer in units N of the working-scale rounding (eps/2 x the largest intermediate
RMS x sqrt(outputs)): where the floor (8 N) sits against honest rounding, and how far from 0 the answer
moves when the parameters are drawn. Measurement only: the candidate is our own generator's code, built and
run here, never a verdict.
"""
from __future__ import annotations

import argparse
import copy
import math
import sys
import types


def _seq_sum(x, dim):
    return x.cumsum(dim).select(dim, -1)


def f64() -> None:
    import torch
    import torch.nn.functional as F

    from evokernel.verifier.sandboxed.trial_inputs import PERTURBATIONS

    def blocked_mm(a, b, bk=64):
        out = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
        for k in range(0, a.shape[1], bk):
            out += a[:, k:k + bk] @ b[k:k + bk]
        return out

    def layer_norm(x):
        n = x.shape[-1]
        mu = _seq_sum(x, -1) / n
        var = _seq_sum((x - mu[:, None]) ** 2, -1) / n
        return (x - mu[:, None]) * (1 / torch.sqrt(var + 1e-5))[:, None]

    def softmax(x):
        e = torch.exp(x - x.max(-1, keepdim=True).values)
        return e / _seq_sum(e, -1)[:, None]

    ops = {
        "matmul k=4096": (lambda: [torch.randn(256, 4096), torch.randn(4096, 256)], lambda a, b: a @ b, blocked_mm),
        "row sum": (lambda: [torch.randn(512, 4096)], lambda x: x.sum(-1), lambda x: _seq_sum(x, -1)),
        "mse (1M)": (lambda: [torch.randn(1024, 1024), torch.randn(1024, 1024)], lambda a, b: ((a - b) ** 2).mean(),
                     lambda a, b: _seq_sum(((a - b) ** 2).reshape(-1), 0) / a.numel()),
        "softmax": (lambda: [torch.randn(512, 4096)], lambda x: torch.softmax(x, -1), softmax),
        "layer_norm": (lambda: [torch.randn(512, 4096)], lambda x: F.layer_norm(x, (4096,)), layer_norm),
        "gelu": (lambda: [torch.randn(1 << 20)], F.gelu, lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))),
        "conv2d": (lambda: [torch.randn(8, 16, 32, 32), torch.randn(32, 16, 3, 3)], F.conv2d,
                   lambda x, w: F.conv2d(x.flip(1), w.flip(1))),
    }
    print(f"{'operator':<16} {'kernel':<24} {'max |d|/(1+|r|)':>16} {'norm-wise':>10}")
    for name, (make, ref_fn, honest_fn) in ops.items():
        worst: dict[str, list[float]] = {}
        for perturb in ("none", "scale", "heavy", "shift"):
            for seed in range(2):
                torch.manual_seed(seed)
                xs = [PERTURBATIONS[perturb](x).double() for x in make()]
                r = ref_fn(*xs)
                for who, c in (("double, another order", honest_fn(*xs)),
                               ("float32, widened", ref_fn(*[x.float() for x in xs]).double())):
                    el = float(((c - r).abs() / (1 + r.abs())).max())
                    nr = float((c - r).norm() / r.norm())
                    w = worst.setdefault(who, [0.0, 0.0])
                    worst[who] = [max(w[0], el), max(w[1], nr)]
        for who, (el, nr) in worst.items():
            print(f"{name:<16} {who:<24} {el:>16.3g} {nr:>10.3g}")


def floor(task_path: str, sets: dict, seeds: int) -> None:
    import torch

    from evokernel.generators.template import TemplateGenerator
    from evokernel.generators.template import schedules as S
    from evokernel.generators.template.generator import plan_for
    from evokernel.tasks.load import load_task
    from evokernel.verifier.sandboxed.init_perturbation import drawn_constants
    from evokernel.verifier.sandboxed.op_recorder import ScaleRecorder
    from evokernel.verifier.sandboxed.trial_inputs import PERTURBATIONS

    torch.set_num_threads(1)
    task = load_task(task_path, sets)
    plan = plan_for(task)
    source = TemplateGenerator().render(task, plan, S.make_schedule(plan.primary, plan.families,
                                                                    dict(S.CONSERVATIVE), "draft"))
    tm, cm = types.ModuleType("task"), types.ModuleType("candidate")
    exec(compile(task.source, "task.py", "exec"), tm.__dict__)
    exec(compile(source, "candidate.py", "exec"), cm.__dict__)
    unit = torch.finfo(torch.float32).eps / 2
    print(f"{'params':<8} {'seed':>4} {'inputs':<7} {'|exact|/N':>10} {'PyTorch/N':>10} {'template/N':>11} {'scale':>7}")
    worst = {"default": 0.0, "drawn": 0.0}
    for params in ("default", "drawn"):
        for s in range(seeds):
            def build(cls):
                torch.manual_seed(1000 + s)
                if params == "default":
                    return cls(*tm.get_init_inputs())
                with drawn_constants(77 + s):
                    return cls(*tm.get_init_inputs())
            model, cand = build(tm.Model), build(cm.ModelNew)
            m64 = copy.deepcopy(model).double()
            for perturb in ("none", "scale", "negate", "shift", "heavy"):
                torch.manual_seed(50 + s)
                xs = [PERTURBATIONS[perturb](x) if x.is_floating_point() else x for x in tm.get_inputs()]
                with torch.no_grad():
                    ref, got = model(*xs), cand(*xs)
                    rec = ScaleRecorder()
                    x64 = [x.double() if x.is_floating_point() else x for x in xs]
                    rec.note(x64)
                    with rec:
                        exact = m64(*x64)
                n = unit * rec.scale * math.sqrt(ref.numel())
                e_ref, e_c = float((ref.double() - exact).norm()) / n, float((got.double() - exact).norm()) / n
                worst[params] = max(worst[params], e_c)
                print(f"{params:<8} {s:>4} {perturb:<7} {float(exact.norm()) / n:>10.3g} {e_ref:>10.3f} {e_c:>11.3f} "
                      f"{rec.scale:>7.3g}")
    print(f"worst template/N: default parameters {worst['default']:.3f}, drawn constants {worst['drawn']:.3f} "
          f"(the floor is 8 N)")


def _has_constants(task) -> bool:
    import torch

    from evokernel.verifier.sandboxed.init_perturbation import drawn_constants

    ns = types.ModuleType("task")
    exec(compile(task.source, "task.py", "exec"), ns.__dict__)
    torch.manual_seed(0)
    plain = ns.Model(*ns.get_init_inputs()).state_dict()
    torch.manual_seed(0)
    with drawn_constants(1):
        drawn = ns.Model(*ns.get_init_inputs()).state_dict()
    return any(not torch.equal(plain[k], drawn[k]) for k in plain)


def perturbed(folders: list[str]) -> None:
    import tempfile
    from pathlib import Path

    from evokernel.generators.base import GenerationError
    from evokernel.generators.template import TemplateGenerator
    from evokernel.generators.template import schedules as S
    from evokernel.generators.template.generator import plan_for
    from evokernel.tasks.load import load_task
    from evokernel.tasks.task import TaskError
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    gen = TemplateGenerator()
    rows = []
    with tempfile.TemporaryDirectory(prefix="evk-perturbed-") as cache, \
            Verifier("cpu", VerifyConfig(cache_dir=Path(cache), timing=False)) as v:
        for folder in folders:
            for path in sorted(Path(folder).glob("*.py")):
                try:
                    task = load_task(path, fit="auto")
                    if not _has_constants(task):
                        continue
                    plan = plan_for(task)
                    source = gen.render(task, plan, S.make_schedule(plan.primary, plan.families,
                                                                    dict(S.CONSERVATIVE), "draft"))
                except (GenerationError, TaskError, MemoryError) as exc:
                    print(f"{path.name}: no draft ({type(exc).__name__}: {str(exc)[:80]})", flush=True)
                    continue
                gates = []
                for on in (False, True):
                    v.config.perturbed_parameters = on
                    verdict = v.verify(task, source)
                    gates.append("feasible" if verdict.feasible else verdict.failed_gate)
                    if not verdict.feasible:
                        print(f"  {path.name} ({'with' if on else 'without'} the trial): "
                              f"{verdict.feedback.splitlines()[0][:200]}", flush=True)
                rows.append((f"{Path(folder).name}/{path.name}", *gates))
                print(f"{rows[-1][0]:<60} without: {gates[0]:<12} with: {gates[1]}", flush=True)
    same = sum(r[1] == "feasible" and r[2] == "feasible" for r in rows)
    lost = [r[0] for r in rows if r[1] == "feasible" and r[2] != "feasible"]
    print(f"{len(rows)} drafts of tasks with constant initialisers: {same} feasible with and without the trial; "
          f"feasible only without it: {len(lost)} {lost}")


def main(argv: list[str] | None = None) -> int:
    from evokernel.tasks.task import parse_override

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("f64", help="float64 honest kernels vs float32 widened")
    pp = sub.add_parser("perturbed", help="template drafts of tasks with constant initialisers, trial off/on")
    pp.add_argument("folders", nargs="+")
    fl = sub.add_parser("floor", help="the working-scale floor against an honest template kernel")
    fl.add_argument("task")
    fl.add_argument("--set", action="append", default=[], help="NAME=VALUE size override")
    fl.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.what == "f64":
        f64()
    elif args.what == "perturbed":
        perturbed(args.folders)
    else:
        floor(args.task, dict(parse_override(t) for t in args.set), args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
