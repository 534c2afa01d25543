"""Benchmark of the verifier (issue 2): seconds per verdict, split by stage, cold and cached,
and the timing noise of a kernel timed against itself (A/A).

    python -m evokernel.evals.bench.bench_verifier [--repeats 5] [--quick]

Prints tables; reports medians over repeats. Targets on a 2-core machine: <= 1 s per verdict with
a cached compile on an elementwise task (warm verifier), overhead <= 1.5x (compile + trials).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from evokernel.tasks.load import load_task
from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[2] / "evokernel"
SUITES, EXAMPLES = ROOT / "suites", ROOT / "examples" / "cpu"

# (label, task file, example, overrides)
CASES = [
    ("relu 1M (elementwise)", "cpu_l1/01_relu.py", "01_relu.py", {"batch_size": 16}),
    ("relu default 8M", "cpu_l1/01_relu.py", "01_relu.py", {}),
    ("softmax", "cpu_l1/11_softmax.py", "11_softmax.py", {}),
    ("matmul", "cpu_l1/15_matmul.py", "15_matmul.py", {}),
    ("gemm+bias+relu (L2)", "cpu_l2/01_gemm_bias_relu.py", "l2_01_gemm_bias_relu.py", {}),
    ("relu load_inline", "cpu_l1/01_relu.py", "01_relu_load_inline.py", {"batch_size": 16}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="cached verdicts per case (median reported)")
    ap.add_argument("--aa-rounds", type=int, default=60, help="rounds of the A/A noise test")
    ap.add_argument("--quick", action="store_true", help="first case only, 2 repeats")
    args = ap.parse_args()
    cases = CASES[:1] if args.quick else CASES
    repeats = 2 if args.quick else args.repeats
    console = Console(width=220)

    with tempfile.TemporaryDirectory(prefix="evk-bench-") as cache:
        config = VerifyConfig(cache_dir=Path(cache))
        t0 = time.perf_counter()
        verifier = Verifier("cpu", config).start()
        startup = time.perf_counter() - t0
        rows = []
        try:
            for label, task_path, example, overrides in tqdm(cases, desc="verdicts", unit="case"):
                task = load_task(SUITES / task_path, overrides)
                source = (EXAMPLES / example).read_text()
                cold = verifier.verify(task, source)  # fresh cache dir: a real build
                assert cold.feasible, cold.feedback
                cached = [verifier.verify(task, source) for _ in range(repeats)]
                assert all(v.feasible for v in cached)
                rows.append((label, cold, cached))
            aa = []
            for label, task_path, example, overrides in tqdm(cases[:3], desc="A/A noise", unit="case"):
                task = load_task(SUITES / task_path, overrides)
                aa.append((label, verifier.timing_noise(task, (EXAMPLES / example).read_text(), args.aa_rounds)))
        finally:
            verifier.close()

    def med(vs, key):
        return statistics.median(v.timings.get(key, 0.0) for v in vs)

    table = Table(title=f"Seconds per verdict (cpu backend, 1 thread, sandbox start-up once: {startup:.2f} s; "
                        f"cached = median of {repeats})")
    for col in ("case", "run", "total", "compile", "load", "correctness", "timing (wall)", "timed calls",
                "overhead", "overhead / (compile+trials)", "eager ms", "speedup"):
        table.add_column(col, justify="right" if col != "case" else "left")
    for label, cold, cached in rows:
        for name, vs in (("cold", [cold]), ("cached", cached)):
            measured = med(vs, "compile") + med(vs, "correctness_trials") + med(vs, "timed_calls")
            table.add_row(label, name, f"{med(vs, 'total'):.2f}", f"{med(vs, 'compile'):.2f}", f"{med(vs, 'load'):.2f}",
                          f"{med(vs, 'correctness_trials'):.2f}", f"{med(vs, 'timing'):.2f}",
                          f"{med(vs, 'timed_calls'):.2f}", f"{med(vs, 'overhead'):.2f}",
                          f"{med(vs, 'overhead') / measured:.2f}" if measured else "-",
                          f"{statistics.median(v.reference_ms for v in vs):.2f}",
                          f"{statistics.median(v.speedup for v in vs):.2f}")
    console.print(table)
    noise = Table(title=f"A/A timing noise: one kernel timed against itself ({args.aa_rounds} interleaved rounds)")
    for col in ("case", "median ratio", "IQR", "p05", "p95", "IQR/median"):
        noise.add_column(col, justify="right" if col != "case" else "left")
    for label, r in aa:
        noise.add_row(label, f"{r['median_ratio']:.3f}", f"{r['iqr']:.3f}", f"{r['p05']:.3f}", f"{r['p95']:.3f}",
                      f"{r['noise']:.3f}")
    console.print(noise)


if __name__ == "__main__":
    main()
