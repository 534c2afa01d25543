"""What the torch.compile baseline adds to a feasible verdict, and what torch's own cache saves across runs.

    python -m evokernel.evals.bench.bench_compile_baseline [--repeats 3]

Per case, with a private build cache (so Inductor's disk cache starts cold):

* ``off``: a warm verifier without the baseline (median of ``--repeats`` cached verdicts);
* ``on, reused``: a verifier with the baseline after its first verdict of the task (median of ``--repeats``):
  the compiled worker kept with the task's reference is reused, the cost of every later verdict;
* ``first, cold``: that verifier's first verdict of the task, Inductor's disk cache empty (a task never
  compiled on this machine);
* ``first, new run``: the first verdict of a new verifier, the disk cache warm (a new run of a task compiled
  before). This is also what *every* verdict paid before the compiled worker was kept (a new worker, a new
  ``torch.compile`` and its first call, per verdict).

Columns are the verdict's ``timings.total``; ``added`` = minus the ``off`` median. Also each case's speedup
vs eager and vs torch.compile (or why compiling failed) from the last ``on`` verdict. Medians and
differences only; the machine is shared (its load average is printed), compare columns of one run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("relu 1M floats", "evokernel/suites/cpu_l1/01_relu.py", "evokernel/examples/cpu/01_relu.py", {"batch_size": 16}),
    ("softmax", "evokernel/suites/cpu_l1/11_softmax.py", "evokernel/examples/cpu/11_softmax.py", {}),
    ("matmul", "evokernel/suites/cpu_l1/15_matmul.py", "evokernel/examples/cpu/15_matmul.py", {}),
    ("gemm+bias+relu (L2)", "evokernel/suites/cpu_l2/01_gemm_bias_relu.py",
     "evokernel/examples/cpu/l2_01_gemm_bias_relu.py", {}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evokernel.tasks.load import load_task
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    cases = [(label, load_task(ROOT / t, o), (ROOT / c).read_text()) for label, t, c, o in CASES]
    load0 = os.getloadavg()[0]
    res: dict[str, dict[str, object]] = {label: {} for label, _, _ in cases}

    def total(v: object) -> float:
        assert v.feasible, v.feedback  # type: ignore[attr-defined]
        return float(v.timings["total"])  # type: ignore[attr-defined]

    with tempfile.TemporaryDirectory(prefix="evk-bench-compile-") as cache:
        with Verifier("cpu", VerifyConfig(cache_dir=Path(cache))) as off:
            for label, task, src in cases:
                off.verify(task, src)  # builds the candidate
                res[label]["off"] = statistics.median(total(off.verify(task, src)) for _ in range(args.repeats))
        for run in ("first, cold", "first, new run"):
            with Verifier("cpu", VerifyConfig(cache_dir=Path(cache), compile_baseline=True)) as on:
                for label, task, src in cases:
                    first = on.verify(task, src)
                    res[label][run] = total(first)
                    if run == "first, cold":
                        later = [on.verify(task, src) for _ in range(args.repeats)]
                        res[label]["on, reused"] = statistics.median(total(v) for v in later)
                        res[label]["last"] = later[-1]
    load1 = os.getloadavg()[0]
    table = Table(title=f"the torch.compile baseline: verdict seconds (median of {args.repeats}); load average "
                        f"{load0:.1f} -> {load1:.1f} on {os.cpu_count()} CPUs")
    cols = ("case", "off", "on, reused", "added", "first, cold", "added", "first, new run", "added",
            "vs eager", "vs compile")
    for col in cols:
        table.add_column(col, justify="left" if col == "case" else "right")
    for label, r in res.items():
        off_s = float(r["off"])  # type: ignore[arg-type]
        last = r["last"]
        info = last.details.get("compile_baseline") or {}  # type: ignore[attr-defined]
        vs_compile = f"{last.speedup_vs_compile:.2f}x" if last.speedup_vs_compile else \
            f"compile failed: {str(info.get('error'))[:60]}"  # type: ignore[attr-defined]
        row = [label, f"{off_s:.2f}"]
        for k in ("on, reused", "first, cold", "first, new run"):
            row += [f"{float(r[k]):.2f}", f"{float(r[k]) - off_s:+.2f}"]  # type: ignore[arg-type]
        row += [f"{last.speedup:.2f}x", vs_compile]  # type: ignore[attr-defined]
        table.add_row(*row)
    Console(width=180).print(table)


if __name__ == "__main__":
    main()
