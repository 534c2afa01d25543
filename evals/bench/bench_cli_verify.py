"""`evokernel verify` as a user runs it: wall time of the CLI, without and with a warm verifier.

    python -m evokernel.evals.bench.bench_cli_verify [--repeats 5]

For each case: the CLI started fresh with ``--no-server`` (it starts its own sandboxes and imports torch,
as every call did before the warm verifier existed), and the CLI talking to ``evokernel verify --serve``
(started once here, its build cache and reference workers warm after a first call). A private build cache
is used and built before the measurements, so both columns are cached verdicts. Medians of ``--repeats``
wall times, and the verdict's own time as the server reports it (``timings.total``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "evokernel", "verify"]
CASES = [
    ("matmul (make demo)", "evokernel/suites/cpu_l1/15_matmul.py", "evokernel/examples/cpu/15_matmul.py", []),
    ("relu 1M floats", "evokernel/suites/cpu_l1/01_relu.py", "evokernel/examples/cpu/01_relu.py",
     ["--set", "batch_size=16"]),
    ("relu 8M floats (default)", "evokernel/suites/cpu_l1/01_relu.py", "evokernel/examples/cpu/01_relu.py", []),
]


def timed(args: list[str], env: dict[str, str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    p = subprocess.run(CLI + args + ["--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"verify failed ({p.returncode}): {p.stderr[-2000:]}")
    return wall, json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="evk-bench-cli-") as cache:
        env = {**os.environ, "EVOKERNEL_CACHE": cache, "HF_HUB_OFFLINE": "1"}
        rows = []
        for label, task, cand, extra in CASES:
            timed([task, cand, *extra, "--no-server"], env)  # builds into the private cache
            cold = [timed([task, cand, *extra, "--no-server"], env)[0] for _ in range(args.repeats)]
            rows.append([label, cold])
        server = subprocess.Popen(CLI + ["--serve"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        try:
            server.stderr.readline()  # "... listening on ..."
            for row, (label, task, cand, extra) in zip(rows, CASES):
                timed([task, cand, *extra], env)  # the server's reference worker for this task
                runs = [timed([task, cand, *extra], env) for _ in range(args.repeats)]
                row += [[w for w, _ in runs], [v["timings"]["total"] for _, v in runs]]
        finally:
            subprocess.run(CLI + ["--stop-server"], cwd=ROOT, env=env, capture_output=True)
            server.wait(timeout=60)
    table = Table(title=f"evokernel verify through the CLI, cached build (median of {args.repeats}), seconds")
    for col in ("case", "CLI, no server", "CLI, warm server", "of which the verdict", "speed-up"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for label, cold, warm, verdict in rows:
        c, w = statistics.median(cold), statistics.median(warm)
        table.add_row(label, f"{c:.2f}", f"{w:.2f}", f"{statistics.median(verdict):.2f}", f"{c / w:.1f}x")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
