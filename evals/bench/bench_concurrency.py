"""What ``evokernel run --concurrency K`` buys: the same stream with K = 1 (one verifier in the run's process)
and K = 2, 3 … (K warm verifier actors on a private local Ray), through the CLI as a user runs it.

    python -m evokernel.evals.bench.bench_concurrency                     # cpu-l1 first 6 tasks, T = 3, K = 1, 2
    python -m evokernel.evals.bench.bench_concurrency --tasks 8 --budget 4 --k 1,2 --repeats 3

For each K (alternating order, ``--repeats`` times, a fresh memory each time): wall time of the run (Ray's
start-up included), attempts per minute, tasks solved, and the spread of each task's best speedup between the
first two repeats of the same K (median |log ratio|): how much the figures move from run to run, which parallel
timing on one machine is expected to raise (with K > 1 the kernels found may differ too: the order of memory
updates does). Medians over repeats; compare ratios within one run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

SMALL = {"batch_size": 16, "dim": 4096}


def one_run(k: int, tasks: int, budget: int, work: Path) -> dict[str, Any]:
    run_dir = work / "run"
    cmd = [sys.executable, "-m", "evokernel", "run", "cpu-l1", "--limit", str(tasks), "-T", str(budget),
           "--concurrency", str(k), "--memory", str(work / "mem"), "--run-dir", str(run_dir), "--json"]
    for name, value in SMALL.items():
        cmd += ["--set", f"{name}={value}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"K={k}: evokernel run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    speedups = {t["task"]: t["speedup_vs_eager"] for t in summary["tasks"] if t.get("speedup_vs_eager")}
    return {"wall_s": wall, "attempts": summary["attempts"], "solved": sum(t["feasible"] for t in summary["tasks"]),
            "speedups": speedups}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=6)
    ap.add_argument("--budget", type=int, default=3)
    ap.add_argument("--k", default="1,2", help="comma-separated K values")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    ks = [int(x) for x in args.k.split(",")]
    results: dict[int, list[dict[str, Any]]] = {k: [] for k in ks}
    for rep in range(args.repeats):
        for k in (ks if rep % 2 == 0 else ks[::-1]):
            with tempfile.TemporaryDirectory(prefix=f"bench-conc-{k}-") as d:
                r = one_run(k, args.tasks, args.budget, Path(d))
            results[k].append(r)
            print(f"repeat {rep + 1}, K={k}: {r['wall_s']:.1f} s, {r['attempts']} attempts", file=sys.stderr)
    table = Table(title=f"--concurrency K: cpu-l1 first {args.tasks} tasks, T = {args.budget}, template generator, "
                        f"{os.cpu_count()} CPUs (medians of {args.repeats})")
    for col in ("K", "wall s", "attempts/min", "vs K=1", "solved", "speedup spread"):
        table.add_column(col, justify="right")
    base = statistics.median(r["wall_s"] for r in results[ks[0]])
    for k in ks:
        rs = results[k]
        wall = statistics.median(r["wall_s"] for r in rs)
        per_min = statistics.median(60 * r["attempts"] / r["wall_s"] for r in rs)
        spread = "-"
        if len(rs) >= 2:
            common = set(rs[0]["speedups"]) & set(rs[1]["speedups"])
            if common:
                spread = f"{statistics.median(abs(math.log(rs[0]['speedups'][t] / rs[1]['speedups'][t])) for t in common):.3f}"
        table.add_row(str(k), f"{wall:.1f}", f"{per_min:.1f}", f"{base / wall:.2f}x",
                      f"{statistics.median(r['solved'] for r in rs):.0f}/{args.tasks}", spread)
    Console().print(table)


if __name__ == "__main__":
    main()
