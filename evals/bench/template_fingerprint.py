"""A fingerprint of every kernel the template generator writes, for refactors that must not change one byte.

    python -m evokernel.evals.bench.template_fingerprint [--out FILE] [--check FILE] [--kernelbench DIR] [--depth 2]
    python -m evokernel.evals.bench.template_fingerprint --kernelbench ../shared/benchmarks/kernelbench \
        --check evals/bench/template_fingerprint.json     # the reference: the sources as of the layered template

What it renders, per suite task (``cpu-l1``/``cpu-l2`` on the cpu backend, ``npu-l1``/``npu-l2`` on ascend-sim):

* every schedule within ``--depth`` transforms of the conservative draft (default 2: the draft, each single
  transform and each composition of two), through ``TemplateGenerator.render`` / ``render_ascend`` -- the
  candidate file, and for Ascend C the host geometry;
* the public ``generate`` path: drafts with seeds 0-3 (memory-free: conservative or explored), one refinement of
  each, and a draft and a refinement guided by that refinement as retrieved memory, so the draft/refine policy is
  covered too;
* with ``--kernelbench DIR`` (or $EVOKERNEL_KERNELBENCH), KernelBench's level1/level2 files as they are: the draft
  and every single transform, on both backends.

A refusal (``GenerationError``) is fingerprinted by its message, so what the generator refuses must not change
either. The result is one digest per (backend, task) over its sorted (schedule, sha256) pairs, and a total;
``--out`` writes them as JSON, ``--check`` compares with such a file and names the tasks that differ (exit 1).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SUITES = {"cpu": ["cpu_l1", "cpu_l2"], "ascend-sim": ["npu_l1", "npu_l2"]}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _spaces():
    """(cpu schedule module, ascend schedule module, plan_for, ascend_op_for) of the current layout."""
    from evokernel.generators.template import generator as G
    from evokernel.generators.template.ascend import schedules as AS
    from evokernel.generators.template.cpu import schedules as S

    return S, AS, G.plan_for, G.ascend_op_for


def _canonical(schedule: dict[str, Any]) -> str:
    from evokernel.generators.template.front.search import canonical

    return canonical(schedule)


def _neighbourhood(space: Any, start: dict[str, Any], names: list[str], depth: int) -> list[dict[str, Any]]:
    """Every schedule within ``depth`` transforms of ``start``, each once (by canonical knobs), in a fixed order."""
    seen = {_canonical(start): start}
    frontier = [start]
    for _ in range(depth):
        nxt = []
        for s in frontier:
            for name in names:
                c = space.apply_transform(s, name)
                if c is not None and _canonical(c) not in seen:
                    seen[_canonical(c)] = c
                    nxt.append(c)
        frontier = nxt
    return list(seen.values())


def _render(gen: Any, task: Any, backend: str, depth: int) -> dict[str, str]:
    """schedule (canonical) -> sha256 of what the generator writes for it (or of its refusal)."""
    from evokernel.generators.base import GenerationError

    S, AS, plan_for, ascend_op_for = _spaces()
    out: dict[str, str] = {}
    try:
        if backend == "cpu":
            plan = plan_for(task)
            start = S.make_schedule(plan.primary, plan.families, dict(S.CONSERVATIVE), "draft")
            space, names = S, S.TRANSFORM_NAMES
        else:
            op = ascend_op_for(task)
            start = AS.make_schedule(op.family, dict(AS.CONSERVATIVE), "draft")
            space, names = AS, AS.TRANSFORM_NAMES
    except GenerationError as exc:
        return {"refused": _sha(str(exc))}
    except Exception as exc:  # noqa: BLE001 - a crash is behaviour too (fingerprinted by type and message)
        return {"crashed": _sha(f"{type(exc).__name__}: {exc}")}
    for sched in _neighbourhood(space, start, names, depth):
        key = _canonical(sched)
        try:
            if backend == "cpu":
                out[key] = _sha(gen.render(task, plan, sched))
            else:
                source, _, geo = gen.render_ascend(task, op, sched)
                out[key] = _sha(source + "\n" + json.dumps(geo, sort_keys=True))
        except GenerationError as exc:
            out[key] = "refused:" + _sha(str(exc))
        except Exception as exc:  # noqa: BLE001
            out[key] = "crashed:" + _sha(f"{type(exc).__name__}: {exc}")
    return out


def _policy(gen: Any, task: Any, backend: str) -> dict[str, str]:
    """Drafts with seeds 0-3, one refinement of each, and a memory-guided draft and refinement (that refinement
    retrieved as a faster child) through ``generate`` (schedule and source)."""
    from evokernel.generators.base import ContextItem, GenerationRequest

    out: dict[str, str] = {}
    for seed in range(4):
        try:
            g = gen.generate(GenerationRequest(task=task, stage="draft", backend=backend, seed=seed))
        except Exception as exc:  # noqa: BLE001 - a refusal (GenerationError) or a crash
            out[f"draft{seed}"] = "refused:" + _sha(f"{type(exc).__name__}: {exc}")
            continue
        out[f"draft{seed}"] = _sha(json.dumps(g.schedule, sort_keys=True) + g.source)
        start = ContextItem(id=f"s{seed}", kind="trace", text="", meta={"schedule": g.schedule, "feasible": True})
        try:
            r = gen.generate(GenerationRequest(task=task, stage="refine", backend=backend, seed=seed,
                                               start_point=start))
            out[f"refine{seed}"] = _sha(json.dumps(r.schedule, sort_keys=True) + r.source)
        except Exception as exc:  # noqa: BLE001
            out[f"refine{seed}"] = "refused:" + _sha(f"{type(exc).__name__}: {exc}")
            continue
        # memory: the refinement as a faster feasible child of the draft guides the next draft and refinement
        child = ContextItem(id=f"c{seed}", kind="trace", text="", meta={
            "schedule": r.schedule, "feasible": True, "latency_ms": 1.0, "parent": start.id, "speedup_vs_parent": 1.5})
        try:
            m = gen.generate(GenerationRequest(task=task, stage="draft", backend=backend, seed=seed, context=[child]))
            out[f"memory{seed}"] = _sha(json.dumps(m.schedule, sort_keys=True) + m.source)
            n = gen.generate(GenerationRequest(task=task, stage="refine", backend=backend, seed=seed, context=[child],
                                               start_point=start, children=[child]))
            out[f"memory-refine{seed}"] = _sha(json.dumps(n.schedule, sort_keys=True) + n.source)
        except Exception as exc:  # noqa: BLE001
            out[f"memory{seed}"] = "refused:" + _sha(f"{type(exc).__name__}: {exc}")
    return out


def _digest(entries: dict[str, str]) -> str:
    return _sha(json.dumps(sorted(entries.items())))


def fingerprint(kernelbench: Path | None = None, depth: int = 2, only: list[str] | None = None) -> dict[str, Any]:
    """{"tasks": {"backend|task": {"n": schedules, "digest": ...}}, "total": ..., "schedules": ...}; ``only``:
    just these suite tasks (``"npu_l1/19_softmax"``)."""
    from evokernel.generators.template import TemplateGenerator
    from evokernel.tasks.load import load_task, load_tasks

    jobs: list[tuple[str, str, Any, int, bool]] = []
    for backend, suites in SUITES.items():
        for suite in suites:
            for p in sorted((ROOT / "evokernel" / "suites" / suite).glob("[0-9]*.py")):
                if only is not None and f"{suite}/{p.stem}" not in only:
                    continue
                jobs.append((backend, f"{suite}/{p.stem}", load_task(p), depth, True))
    if kernelbench is not None:
        for level in ("level1", "level2"):
            for task in load_tasks(str(kernelbench / level)):
                for backend in SUITES:
                    jobs.append((backend, f"kb-{level}/{task.name}", task, 1, False))
    tasks: dict[str, Any] = {}
    n_sched = 0
    for backend, name, task, d, policy in jobs:
        gen = TemplateGenerator()  # a fresh cache per task: nothing leaks between tasks
        entries = _render(gen, task, backend, d)
        if policy:
            entries.update(_policy(gen, task, backend))
        n_sched += len(entries)
        tasks[f"{backend}|{name}"] = {"n": len(entries), "digest": _digest(entries)}
    total = _sha(json.dumps(sorted((k, v["digest"]) for k, v in tasks.items())))
    return {"depth": depth, "schedules": n_sched, "tasks": tasks, "total": total}


def compare(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    """The tasks of this run whose fingerprint differs from the file's (or that the file lacks); the file's tasks
    this run did not render (KernelBench without ``--kernelbench``) are not compared."""
    return [k for k in sorted(new["tasks"]) if new["tasks"][k] != old["tasks"].get(k)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the fingerprint as JSON")
    ap.add_argument("--check", type=Path, help="compare with a fingerprint written before")
    ap.add_argument("--kernelbench", type=Path, default=os.environ.get("EVOKERNEL_KERNELBENCH") or None)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--tasks", nargs="*", help="only these suite tasks (e.g. npu_l1/19_softmax)")
    args = ap.parse_args(argv)
    t0 = time.time()
    fp = fingerprint(Path(args.kernelbench) if args.kernelbench else None, args.depth, args.tasks)
    print(f"{len(fp['tasks'])} (backend, task) pairs, {fp['schedules']} schedules, total {fp['total'][:16]} "
          f"({time.time() - t0:.0f} s)")
    if args.out:
        args.out.write_text(json.dumps(fp, indent=1, sort_keys=True) + "\n")
    if args.check:
        old = json.loads(args.check.read_text())
        diff = compare(fp, old)
        for k in diff:
            print(f"differs: {k}")
        skipped = len(set(old["tasks"]) - set(fp["tasks"]))
        print(("identical" if not diff else f"{len(diff)} task(s) differ") +
              (f" ({skipped} task(s) of the file not rendered here)" if skipped else ""))
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
