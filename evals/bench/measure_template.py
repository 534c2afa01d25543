"""Measure the offline ``template`` generator against the real verifier.

    python -m evokernel.evals.bench.measure_template [SUITE|DIR ...] [--refine K] [--tasks NAME ...] [--seed S]
        [--fit auto|none] [--out FILE] [--json FILE]

KernelBench's own files, at sizes fitted to this machine (``--fit auto``, the default for directories):

    python -m evokernel.evals.bench.measure_template ../shared/benchmarks/kernelbench/level1 --refine 2 \
        --json kb-l1.jsonl --out kb-l1.md

Per task: up to ``--drafts`` (3) draft attempts until one is feasible (attempt 2+ sees the previous
attempt's feedback), then ``K`` refinement steps, each refining the current best kernel with the
children already tried from it (a faster feasible child becomes the new best, with no children).
The refinement traces so far are passed as memory context (with ``parent`` and
``speedup_vs_parent``), so transforms that paid off on this task are preferred.

Prints one row per task: family, draft feasible (attempt #), draft latency, best latency after K
refinements, speedup best/first draft, speedup of the best vs eager PyTorch (the verifier's median
per-round ratio), and the transforms that were kept.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
import zlib
from typing import Any

from tqdm import tqdm

from evokernel.generators.base import ContextItem, GenerationError, GenerationRequest
from evokernel.generators.template import TemplateGenerator, plan_for
from evokernel.tasks.load import load_tasks


def _seed(base: int, *parts: Any) -> int:
    return (zlib.crc32(":".join(str(p) for p in parts).encode()) + base) % (2**31)


def measure_task(task: Any, verifier: Any, gen: TemplateGenerator, refine: int, drafts: int, seed: int) -> dict[str, Any]:
    row: dict[str, Any] = {"task": task.name, "category": task.category, "family": "-", "attempt": None,
                           "draft_ms": None, "best_ms": None, "ref_ms": None, "speedup_eager": None, "kept": [],
                           "refine_feasible": 0, "refine_tried": 0, "error": "", "gate": None,
                           "fitted": {k: v[1] for k, v in ((task.fit or {}).get("changed") or {}).items()}}
    try:
        plan = plan_for(task)
        row["family"] = "+".join(plan.families)
    except GenerationError as exc:
        row["error"] = str(exc)
        return row
    feedback = None
    best: ContextItem | None = None
    best_verdict = None
    for attempt in range(drafts):
        req = GenerationRequest(task=task, stage="draft", iteration=attempt, seed=_seed(seed, task.name, "draft", attempt),
                                last_feedback=feedback)
        try:
            g = gen.generate(req)
        except GenerationError as exc:
            row["error"] = str(exc)
            return row
        v = verifier.verify(task, g.source)
        row["gate"] = v.failed_gate
        if v.feasible and v.latency_ms:
            row["attempt"] = attempt + 1
            row["draft_ms"] = v.latency_ms
            best = ContextItem(id=f"{task.name}-d{attempt}", kind="trace", text=g.source,
                               meta={"schedule": json.dumps(g.schedule), "feasible": True, "latency_ms": v.latency_ms,
                                     "task": task.name, "category": task.category})
            best_verdict = v
            break
        feedback = v.feedback
    if best is None or best_verdict is None:
        row["error"] = f"no feasible draft ({row['gate']}): {reason_line(feedback or '')}"
        return row
    children: list[ContextItem] = []
    history: list[ContextItem] = []
    for step in range(refine):
        req = GenerationRequest(task=task, stage="refine", iteration=drafts + step,
                                seed=_seed(seed, task.name, "refine", step), start_point=best,
                                children=list(children), context=list(history),
                                best_latency_ms=best.meta["latency_ms"])
        try:
            g = gen.generate(req)
        except GenerationError:
            break
        row["refine_tried"] += 1
        v = verifier.verify(task, g.source)
        parent_ms = float(best.meta["latency_ms"])
        meta = {"schedule": json.dumps(g.schedule), "feasible": bool(v.feasible),
                "latency_ms": float(v.latency_ms) if v.feasible and v.latency_ms else -1.0,
                "parent": best.id, "task": task.name, "category": task.category}
        if v.feasible and v.latency_ms:
            row["refine_feasible"] += 1
            meta["speedup_vs_parent"] = parent_ms / float(v.latency_ms)
        item = ContextItem(id=f"{task.name}-r{step}", kind="trace", text=g.source, meta=meta)
        history.append(item)
        if v.feasible and v.latency_ms and v.latency_ms < parent_ms:
            best, best_verdict, children = item, v, []
            row["kept"].append(g.schedule.get("transform") if g.schedule else "?")
        else:
            children.append(item)
    row["best_ms"] = float(best.meta["latency_ms"])
    row["ref_ms"] = best_verdict.reference_ms
    row["speedup_eager"] = best_verdict.speedup
    return row


def reason_line(feedback: str) -> str:
    """The one line of a refusal's feedback that says why: the first finding (``line N: [rule] ...``) or the first
    line that is not the gate's heading."""
    lines = [ln.strip() for ln in feedback.splitlines() if ln.strip()]
    for ln in lines:
        if re.match(r"line \d+: \[", ln):
            return ln[:200]
    rest = [ln for ln in lines if not ln.endswith(":")]
    return (rest or lines or [""])[0][:200]


def skipped_row(line: str) -> dict[str, Any]:
    """A file the directory's loading skipped (``path: reason``): a row of its own, so every file is counted."""
    path, _, why = line.partition(": ")
    name = path.rsplit("/", 1)[-1].split(":")[0].removesuffix(".py")
    return {"task": name, "category": "-", "family": "-", "attempt": None, "draft_ms": None, "best_ms": None,
            "ref_ms": None, "speedup_eager": None, "kept": [], "refine_feasible": 0, "refine_tried": 0, "gate": "load",
            "error": f"not loaded: {why.split(';')[0][:200]}"}


def _fmt(v: Any, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def render(rows: list[dict[str, Any]], suite: str, refine: int, width: int = 60) -> str:
    out = [f"### {suite}: template drafts + {refine} refinement steps", "",
           "| task | category | planned | family | draft feasible (attempt) | draft ms | best ms | best/first | vs eager "
           "| kept transforms |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        feas = f"yes ({r['attempt']})" if r["attempt"] else f"no: {r['error'][:width]}".replace("|", "\\|")
        ratio = r["draft_ms"] / r["best_ms"] if r["draft_ms"] and r["best_ms"] else None
        planned = "yes" if r["family"] != "-" else "no"
        out.append(f"| {r['task']} | {r.get('category') or '-'} | {planned} | {r['family']} | {feas} | {_fmt(r['draft_ms'])} | {_fmt(r['best_ms'])} | "
                   f"{_fmt(ratio)} | {_fmt(r['speedup_eager'])} | {', '.join(r['kept']) or '-'} |")
    ok = [r for r in rows if r["attempt"]]
    ratios = [r["draft_ms"] / r["best_ms"] for r in ok if r["best_ms"]]
    eager = [r["speedup_eager"] for r in ok if r["speedup_eager"]]
    first = sum(1 for r in ok if r["attempt"] == 1)
    planned = sum(1 for r in rows if r["family"] != "-")
    out += ["", f"planned: {planned}/{len(rows)}; feasible drafts: {len(ok)}/{len(rows)} (first attempt: {first}); "
            f"median refinement speedup best/first: {_fmt(statistics.median(ratios) if ratios else None)}; "
            f"median speedup vs eager: {_fmt(statistics.median(eager) if eager else None)}; "
            f"refinements feasible: {sum(r['refine_feasible'] for r in rows)}/{sum(r['refine_tried'] for r in rows)}"]
    cats: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        cats.setdefault(r.get("category") or "uncategorized", []).append(r)
    if len(cats) > 1:
        out += ["", "| category | tasks | feasible drafts | geomean best vs eager |", "|---|---|---|---|"]
        for c, rs in sorted(cats.items()):
            sp = [r["speedup_eager"] for r in rs if r["speedup_eager"]]
            gm = math.exp(sum(math.log(x) for x in sp) / len(sp)) if sp else None
            out.append(f"| {c} | {len(rs)} | {sum(1 for r in rs if r['attempt'])} | {_fmt(gm)} |")
        sp = [r["speedup_eager"] for r in rows if r["speedup_eager"]]
        gm = math.exp(sum(math.log(x) for x in sp) / len(sp)) if sp else None
        out.append(f"| all | {len(rows)} | {sum(1 for r in rows if r['attempt'])} | {_fmt(gm)} |")
    return "\n".join(out)


def _order(r: dict[str, Any]) -> tuple[int, str]:
    """KernelBench's numbered files in their order (``10_`` after ``9_``), others by name."""
    head = r["task"].split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, r["task"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", nargs="*", default=["cpu-l1"], help="suites, task directories or files")
    ap.add_argument("--fit", choices=["auto", "none"], default="auto",
                    help="fit sizes to this machine (KernelBench's are for GPUs); suites already fit")
    ap.add_argument("--json", default=None, help="append one JSON row per task here as it finishes")
    ap.add_argument("--refine", type=int, default=4)
    ap.add_argument("--drafts", type=int, default=3)
    ap.add_argument("--tasks", nargs="*", default=None, help="substrings of task names to keep")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the markdown table here")
    ap.add_argument("--width", type=int, default=60, help="characters of a refusal's reason in the table")
    args = ap.parse_args(argv)
    from evokernel.verifier import Verifier, VerifyConfig

    loaded = [load_tasks(target, fit=args.fit) for target in args.suite]
    for line in (s for ts in loaded for s in getattr(ts, "skipped", [])):
        print(f"skipped {line}", file=sys.stderr)
    tasks = [t for ts in loaded for t in ts]
    skipped = [skipped_row(s) for ts in loaded for s in getattr(ts, "skipped", [])]
    if args.tasks:
        tasks = [t for t in tasks if any(s in t.name for s in args.tasks)]
        skipped = [r for r in skipped if any(s in r["task"] for s in args.tasks)]
    gen = TemplateGenerator()
    rows = []
    t0 = time.time()
    with Verifier("cpu", VerifyConfig()) as verifier:
        for task in tqdm(tasks, desc="template", file=sys.stderr):
            try:
                rows.append(measure_task(task, verifier, gen, args.refine, args.drafts, args.seed))
            except Exception as exc:  # noqa: BLE001 - e.g. the reference itself fails: a row, not a stop
                rows.append({"task": task.name, "category": task.category, "family": "-", "attempt": None,
                             "draft_ms": None, "best_ms": None, "ref_ms": None, "speedup_eager": None, "kept": [],
                             "refine_feasible": 0, "refine_tried": 0, "gate": None,
                             "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(rows[-1]) + "\n")
    if args.json:
        with open(args.json, "a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in skipped)
    rows = sorted(rows + skipped, key=_order)
    table = render(rows, " + ".join(map(str, args.suite)), args.refine, args.width) + f"\n\n(wall time {time.time() - t0:.0f} s)"
    print(table)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
