"""`evokernel verify` as a user runs it: wall time of the CLI, in-process and through the warm background verifier.

    python -m evokernel.evals.bench.bench_cli_verify [--repeats 5]

For each case: the CLI started fresh with ``--no-daemon`` (it starts its own sandboxes and imports torch, as
every call did before the warm verifier existed), and the plain CLI, which finds the background verifier
the first call started (`evokernel.cli.verify_daemon`; its reference workers warm after a first call per task).
A private build cache and state directory are used, the builds done before the measurements, so both
columns are cached verdicts; the daemon is stopped at the end. Medians of ``--repeats`` wall times, the
verdict's own time as the daemon reports it (``timings.total``), the rest (the client: Python, the CLI's
imports, the task file, the socket), and the first call's time (it starts the daemon). The target is a
cached verdict through the CLI in <= 1.5 s; the machine's load average is printed with the table (the
numbers scale with it: compare columns of one run).
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
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="evk-bench-cli-") as cache:
        env = {**os.environ, "EVOKERNEL_CACHE": cache, "EVOKERNEL_VERIFY_STATE": str(Path(cache) / "state"),
               "HF_HUB_OFFLINE": "1"}
        rows = []
        for label, task, cand, extra in CASES:
            timed([task, cand, *extra, "--no-daemon"], env)  # builds into the private cache
            cold = [timed([task, cand, *extra, "--no-daemon"], env)[0] for _ in range(args.repeats)]
            rows.append([label, cold])
        try:
            for k, (row, (label, task, cand, extra)) in enumerate(zip(rows, CASES)):
                first = timed([task, cand, *extra], env)[0]  # k == 0: starts the daemon; else its reference for this task
                runs = [timed([task, cand, *extra], env) for _ in range(args.repeats)]
                pids = {v["server"]["pid"] for _, v in runs}
                if len(pids) != 1:
                    raise SystemExit(f"the daemon changed during the measurements: {pids}")
                row += [[w for w, _ in runs], [v["timings"]["total"] for _, v in runs], first]
        finally:
            subprocess.run(CLI + ["--stop-server"], cwd=ROOT, env=env, capture_output=True)
    load1 = os.getloadavg()[0]
    table = Table(title=f"evokernel verify through the CLI, cached build (median of {args.repeats}), seconds; "
                        f"load average {load0:.1f} -> {load1:.1f} on {os.cpu_count()} CPUs")
    for col in ("case", "CLI --no-daemon", "CLI (daemon)", "of which the verdict", "the client", "speed-up",
                "first call"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for label, cold, warm, verdict, first in rows:
        c, w, v = statistics.median(cold), statistics.median(warm), statistics.median(verdict)
        table.add_row(label, f"{c:.2f}", f"{w:.2f}", f"{v:.2f}", f"{statistics.median(x - y for x, y in zip(warm, verdict)):.2f}",
                      f"{c / w:.1f}x", f"{first:.2f}")
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
