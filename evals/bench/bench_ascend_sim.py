"""Benchmark of the ascend-sim backend (issue 5): emulated build + check time per candidate.

    python -m evokernel.evals.bench.bench_ascend_sim [--repeats 5] [--quick]

For each case (a shipped Ascend C example, or a template-generated draft, on an npu-l1/npu-l2 task):
the cold verdict (fresh build cache: the emulator runtime once, then the project's kernel and host
translation units and the link), then `--repeats` verdicts with the build cached (median reported),
split into stages: static checks, load (parse, cached build, model_src), correctness trials (the
emulated runs, 5 + 3 perturbed), and the latency model. Target on a 2-core machine: <= 3 s per
cached verdict (warm verifier).
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
SUITES, EXAMPLES = ROOT / "suites", ROOT / "examples" / "ascend"


def cases() -> list[tuple[str, str, str]]:
    """(label, task file, candidate source): the shipped examples, then template drafts if available."""
    out = []
    for ex in sorted(EXAMPLES.glob("*.py")):
        head = ex.read_text().splitlines()[:8]
        task = next((ln.split(":", 1)[1].strip() for ln in head if ln.startswith("task:")), None)
        out.append((f"example {ex.stem}", task or "npu_l1/11_elementwise_add.py", ex.read_text()))
    try:
        from evokernel.generators.base import DRAFT, GenerationRequest
        from evokernel.generators.template.generator import TemplateGenerator

        gen = TemplateGenerator(explore_prob=0.0)
        for task_path in ("npu_l1/03_sigmoid.py", "npu_l1/19_softmax.py", "npu_l1/21_layer_norm.py",
                          "npu_l2/04_residual_layernorm.py"):
            task = load_task(SUITES / task_path)
            try:
                g = gen.generate(GenerationRequest(task=task, stage=DRAFT, backend="ascend-sim"))
            except Exception:  # noqa: BLE001 - a generator that cannot draft this task: no case
                continue
            out.append((f"template {task.name}", task_path, g.source))
    except ImportError:
        pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="cached verdicts per case (median reported)")
    ap.add_argument("--quick", action="store_true", help="first case only, 2 repeats")
    args = ap.parse_args()
    todo = cases()
    todo = todo[:1] if args.quick else todo
    repeats = 2 if args.quick else args.repeats
    console = Console(width=200)
    rows = []
    with tempfile.TemporaryDirectory(prefix="evk-bench-ascend-") as cache:
        t0 = time.perf_counter()
        verifier = Verifier("ascend-sim", VerifyConfig(cache_dir=Path(cache))).start()
        startup = time.perf_counter() - t0
        try:
            for label, task_path, source in tqdm(todo, desc="verdicts", unit="case"):
                task = load_task(SUITES / task_path)
                t = time.perf_counter()
                cold = verifier.verify(task, source)
                cold_s = time.perf_counter() - t
                if not cold.feasible:
                    console.print(f"[red]{label}: not feasible[/red] ({cold.failed_gate}): {cold.feedback[:300]}")
                    continue
                warm = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    v = verifier.verify(task, source)
                    warm.append((time.perf_counter() - t, v))
                med = statistics.median(s for s, _ in warm)

                def stage(name: str) -> float:
                    return statistics.median(v.timings.get(name, 0.0) for _, v in warm)

                rows.append((label, task.name, cold.timings.get("compile", 0.0), cold_s, med, stage("hack_static"),
                             stage("load"), stage("correctness_trials"), stage("timing"),
                             cold.latency_ms * 1e3, cold.reference_ms * 1e3, cold.speedup))
        finally:
            verifier.close()
    table = Table("case", "task", "cold build s", "cold verdict s", "cached verdict s (median)", "static s",
                  "load s", "trials s (8 runs)", "model s", "est. kernel us", "est. eager us", "modelled speedup",
                  title=f"ascend-sim: build + check per candidate ({repeats} cached repeats; verifier start-up "
                        f"{startup:.1f} s, once)",
                  caption="target: cached verdict <= 3 s on 2 cores. Latencies are ESTIMATES of the ascend-sim "
                          "latency model, not measurements.")
    for r in rows:
        table.add_row(r[0], r[1], *(f"{x:.2f}" for x in r[2:9]), f"{r[9]:.1f}", f"{r[10]:.1f}", f"{r[11]:.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
