"""What ``--fit auto`` does to a directory of task files: one row per task, and (``--measure``) real times.

Usage:
    python evals/bench/measure_fit.py DIR [--backend cpu] [--measure] [--warmup 5] [--repeats 5] [--json OUT] [--fit auto|none]

Prints task, category, the constants the fit changed (old->new), MiB of inputs + output + parameters,
the estimated eager ms and whether the task fits the backend's budget. With ``--measure`` every task
is also built for real at its fitted sizes and run eagerly (torch on the CPU, one thread, no grad:
``--warmup`` calls first, as the verifier's timing rounds run in a warm worker (glibc needs a few calls
before big temporaries stop page-faulting), then the median of ``--repeats`` calls), and the summary counts how many measured
times land in the budget's window. Each task runs in its own forked worker process (a crash or a
leak costs one row, never the table; a fresh process also means fresh pages, as a cold verifier
worker sees them); the workers run one after another.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _measure(source: str, filename: str, repeats: int, warmup: int, q: Any) -> None:
    try:
        import warnings

        import torch

        warnings.simplefilter("ignore")  # the tasks' own warnings would break the table
        torch.set_num_threads(1)
        torch.manual_seed(0)
        ns: dict[str, Any] = {"__name__": "measured_task", "__file__": filename}
        exec(compile(source, filename, "exec"), ns)
        with torch.no_grad():
            model = ns["Model"](*ns["get_init_inputs"]())
            inputs = ns["get_inputs"]()
            for _ in range(max(1, warmup)):  # first touches of big buffers page-fault
                model(*inputs)
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                model(*inputs)
                times.append((time.perf_counter() - t) * 1e3)
        q.put({"ms": statistics.median(times)})
    except BaseException as exc:  # noqa: BLE001 - reported as the row's error
        q.put({"error": f"{type(exc).__name__}: {exc}"[:200]})


def measure(source: str, filename: str, repeats: int = 5, warmup: int = 5, timeout: float = 300.0) -> dict[str, Any]:
    ctx = mp.get_context("fork")  # this process has torch imported already: a fork starts in milliseconds
    q = ctx.Queue()
    p = ctx.Process(target=_measure, args=(source, filename, repeats, warmup, q), daemon=True)
    p.start()
    try:
        return q.get(timeout=timeout)
    except Exception:  # noqa: BLE001 - a crash or a timeout
        return {"error": f"no result (exit code {p.exitcode})"}
    finally:
        p.join(5)
        if p.is_alive():
            p.kill()


def _fmt_changed(changed: dict[str, Any]) -> str:
    from evokernel.tasks.fit import _fmt

    return " ".join(f"{k}={_fmt(v[0])}->{_fmt(v[1])}" for k, v in changed.items()) or "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", help="a task directory (or a task file, or a built-in suite)")
    ap.add_argument("--backend", default="cpu", help="whose budget: cpu, ascend-sim or ascend")
    ap.add_argument("--fit", default="auto", choices=("auto", "none"))
    ap.add_argument("--measure", action="store_true", help="also run every task eagerly at its fitted sizes")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = ap.parse_args(argv)

    from evokernel.tasks.fit import MiB, budget_for
    from evokernel.tasks.load import load_tasks
    from evokernel.tasks.task import TaskError

    budget = budget_for(args.backend)
    t0 = time.perf_counter()
    try:
        tasks = load_tasks(args.directory, fit=args.fit, backend=args.backend)
        for line in getattr(tasks, "skipped", []):
            print(f"skipped {line}", file=sys.stderr)
        cats = [t.category for t in tasks]
    except TaskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    load_s = time.perf_counter() - t0
    rows = []
    hi = budget.max_ms if budget.max_ms is not None else float("inf")
    print(f"{'task':<44} {'category':<13} {'MiB':>7} {'est ms':>8} {'meas ms':>8} fits changed")
    for t, cat in zip(tasks, cats):
        f = t.fit or {}
        row: dict[str, Any] = {"task": t.name, "category": cat, "changed": f.get("changed", {}),
                               "bytes": f.get("bytes"), "est_ms": f.get("est_ms"), "fits": f.get("fits"),
                               "note": f.get("note", "")}
        if args.measure:
            row.update(measure(t.source, str(t.path), args.repeats, args.warmup))
        rows.append(row)
        meas = f"{row['ms']:.1f}" if "ms" in row else ("ERR" if "error" in row else "-")
        mib = f"{row['bytes'] / MiB:.1f}" if row["bytes"] is not None else "?"
        est = f"{row['est_ms']:.1f}" if row["est_ms"] is not None else "?"
        print(f"{t.name[:44]:<44} {cat:<13} {mib:>7} {est:>8} {meas:>8} {'yes' if row['fits'] else 'NO ':<4}"
              f"{_fmt_changed(row['changed'])}" + (f"  [{row['note']}]" if row["note"] else "")
              + (f"  [{row['error']}]" if "error" in row else ""), flush=True)
    n = len(rows)
    changed = sum(1 for r in rows if r["changed"])
    fits = sum(1 for r in rows if r["fits"])
    est_in = sum(1 for r in rows if r["est_ms"] is not None and budget.min_ms <= r["est_ms"] <= hi)
    print(f"\n{n} tasks in {load_s:.1f} s (load + categories + fit); {changed} changed, {fits} within the budget "
          f"({budget.max_bytes / MiB:.0f} MiB, est <= {budget.max_ms} ms); estimate in [{budget.min_ms}, {budget.max_ms}] "
          f"ms: {est_in}/{n}")
    if args.measure:
        measured = [r for r in rows if "ms" in r]
        inside = sum(1 for r in measured if budget.min_ms <= r["ms"] <= hi)
        ratios = sorted(r["ms"] / r["est_ms"] for r in measured if r.get("est_ms"))
        print(f"measured: {len(measured)}/{n} ran; in [{budget.min_ms}, {budget.max_ms}] ms: {inside}/{n}; "
              f"max {max((r['ms'] for r in measured), default=0):.1f} ms, min {min((r['ms'] for r in measured), default=0):.2f} ms"
              + (f"; measured/estimated: median {statistics.median(ratios):.2f}, "
                 f"10-90% {ratios[len(ratios) // 10]:.2f}-{ratios[(9 * len(ratios)) // 10]:.2f}" if ratios else ""))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
