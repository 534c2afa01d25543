"""Cached verdict time, this checkout against another one (e.g. the previous release), in one run.

    python -m evokernel.evals.bench.bench_verdict_time [--baseline-python /path/to/other/.venv/bin/python]
                                                 [--repeats 5] [--rounds 3]

Each side verifies the same shipped examples with a warm verifier and a warm build cache (each side its
own), ``--repeats`` times per case, in a subprocess of its own interpreter that uses only the public API
(``Verifier``, ``VerifyConfig``, ``load_task``), so any two versions of EvoKernel can be compared. Sides
alternate ``--rounds`` times (A B A B ...) so a load spike on this shared machine hits both; the table
reports per case the median over all rounds and repeats, and the ratio this / baseline. The issue-13
target: a cached verdict within 1.2x of the previous release's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    ("relu 1M floats", "evokernel/suites/cpu_l1/01_relu.py", "evokernel/examples/cpu/01_relu.py", {"batch_size": 16}),
    ("relu 8M floats", "evokernel/suites/cpu_l1/01_relu.py", "evokernel/examples/cpu/01_relu.py", {}),
    ("softmax", "evokernel/suites/cpu_l1/11_softmax.py", "evokernel/examples/cpu/11_softmax.py", {}),
    ("matmul", "evokernel/suites/cpu_l1/15_matmul.py", "evokernel/examples/cpu/15_matmul.py", {}),
    ("gemm+bias+relu (L2)", "evokernel/suites/cpu_l2/01_gemm_bias_relu.py",
     "evokernel/examples/cpu/l2_01_gemm_bias_relu.py", {}),
    ("relu load_inline", "evokernel/suites/cpu_l1/01_relu.py", "evokernel/examples/cpu/01_relu_load_inline.py",
     {"batch_size": 16}),
]

# runs inside the measured interpreter: a warm verifier, one cold verdict per case, then the cached ones
SNIPPET = r"""
import json, sys, time
from pathlib import Path
try:
    from evokernel.tasks.load import load_task
except ImportError:  # before the redesign (issue 31) tasks was one module
    from evokernel.tasks import load_task
from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig
root, cache, repeats, cases = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
out = {}
with Verifier("cpu", VerifyConfig(cache_dir=cache)) as v:
    for label, task, cand, over in cases:
        t = load_task(root / task, over)
        src = (root / cand).read_text()
        first = v.verify(t, src)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = v.verify(t, src)
            times.append(time.perf_counter() - t0)
        out[label] = {"seconds": times, "feasible": first.feasible and r.feasible,
                      "feedback": "" if r.feasible else r.feedback[:300]}
print("RESULT " + json.dumps(out))
"""


def measure(python: str, root: Path, cache: str, repeats: int) -> dict:
    cases = [[label, task, cand, over] for label, task, cand, over in CASES]
    p = subprocess.run([python, "-c", SNIPPET, str(root), cache, str(repeats), json.dumps(cases)],
                       capture_output=True, text=True, cwd=root, env=None)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"{python} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return json.loads(line[len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-python", help="the interpreter of another checkout's environment (its package "
                    "is what it imports; its examples are read from its own repository root)")
    ap.add_argument("--baseline-root", help="repository root of the baseline (default: two levels above the "
                    "baseline interpreter's venv)")
    ap.add_argument("--repeats", type=int, default=5, help="cached verdicts per case and round")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the two sides")
    args = ap.parse_args()
    sides = {"this": (sys.executable, ROOT)}
    if args.baseline_python:
        # the interpreter's path as named, not resolved: a venv's python is a link out of the venv
        named = Path(os.path.abspath(args.baseline_python))
        base_root = Path(args.baseline_root) if args.baseline_root else named.parents[2]
        sides["baseline"] = (args.baseline_python, base_root)
    times: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    feedback: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="evk-bench-time-") as tmp:
        for _ in range(args.rounds):
            for side, (python, root) in sides.items():
                res = measure(python, root, str(Path(tmp) / side), args.repeats)
                for label, r in res.items():
                    times[side].setdefault(label, []).extend(r["seconds"])
                    if not r["feasible"]:
                        feedback[f"{side}: {label}"] = r["feedback"]
    table = Table(title=f"cached verdict, seconds (median of {args.rounds} x {args.repeats})")
    table.add_column("case")
    for side in sides:
        table.add_column(side, justify="right")
    if "baseline" in sides:
        table.add_column("this / baseline", justify="right")
    for label, *_ in CASES:
        row = [label] + [f"{statistics.median(times[s][label]):.2f}" for s in sides]
        if "baseline" in sides:
            row.append(f"{statistics.median(times['this'][label]) / statistics.median(times['baseline'][label]):.2f}")
        table.add_row(*row)
    Console(width=160).print(table)
    for k, v in feedback.items():
        print(f"NOT FEASIBLE {k}: {v}")


if __name__ == "__main__":
    main()
