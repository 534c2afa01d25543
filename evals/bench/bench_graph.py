"""Graph overhead per attempt, excluding generate and verify.

Runs the real graph (real memory store with embeddings, value ledger, run log, SQLite checkpoints
with durability "sync") with an instant generator and an instant verifier, so what is left is the
machinery EvoKernel adds around each LLM call and verdict: retrieve, q_filter, select_start,
update (memory writes, value updates, run log) and checkpointing. Prints per-node p50/p95 and
the per-attempt total.

    python -m evokernel.evals.bench.bench_graph [--tasks 3] [--budget 20] [--prefill 0,1000]
"""
from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from evokernel.evals.metrics import quantile
from evokernel.generators.base import Generation
from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.graph.main import build_graph
from evokernel.tasks.task import SUITES_DIR
from evokernel.verifier.verdict import Verdict


class InstantGenerator:
    name = "instant"

    def generate(self, request):
        return Generation(source=f"# candidate {request.iteration}\n", summary=f"variant {request.iteration}",
                          schedule={"family": "bench", "unroll": request.iteration % 4}, model="instant")


class InstantVerifier:
    backend = "cpu"

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def verify(self, task, source):
        ok = self.rng.random() < 0.6
        lat = self.rng.uniform(0.5, 2.0)
        return Verdict(feasible=ok, failed_gate=None if ok else "correctness", feedback="" if ok else "mismatch",
                       task=task.name, latency_ms=lat if ok else None, reference_ms=1.0, speedup=1 / lat if ok else None,
                       gates={"hack": True, "compile": True, "correctness": ok})


def prefill(store, n: int) -> None:
    from evokernel.memory.store import MemoryItem

    rng = random.Random(1)
    words = ["relu", "softmax", "matmul", "layer norm", "sum", "max pool", "conv", "gelu", "cumsum", "mse loss"]
    items = [MemoryItem(id=f"pre:{i}", kind=rng.choice(["trace", "experience"]),
                        key=f"{rng.choice(words)} | {rng.choice(words)} | variant {i % 97}",
                        text=f"prefilled item {i}", meta={"backend": "cpu", "task": f"pre/{i % 50}", "feasible": rng.random() < 0.5})
             for i in range(n)]
    for i in range(0, n, 2000):
        store.add(items[i:i + 2000])


def bench(n_tasks: int, budget: int, pre: int) -> dict:
    tasks = sorted((SUITES_DIR / "cpu_l1").glob("*.py"))[:n_tasks]
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Context(budget=budget, memory_dir=f"{tmp}/mem", run_dir=f"{tmp}/run", run_id="bench")
        resources.install(generator=InstantGenerator(), verifier=resources.VerifierService("cpu", verifier=InstantVerifier()))
        try:
            store = resources.store(ctx)
            if pre:
                prefill(store, pre)
            Path(f"{tmp}/run").mkdir(exist_ok=True)
            conn = sqlite3.connect(f"{tmp}/run/ck.sqlite", check_same_thread=False)
            from langgraph.checkpoint.sqlite import SqliteSaver

            app = build_graph(checkpointer=SqliteSaver(conn))
            per_node: dict[str, list[float]] = {}
            attempts: list[float] = []
            last = t_attempt = time.perf_counter()
            for _ns, chunk in app.stream({"tasks": [str(t) for t in tasks]}, {"configurable": {"thread_id": "b"}},
                                         context=ctx, stream_mode="updates", subgraphs=True, durability="sync"):
                now = time.perf_counter()
                for node in chunk:
                    per_node.setdefault(node, []).append((now - last) * 1e3)
                    if node == "update":
                        attempts.append((now - t_attempt) * 1e3)
                        t_attempt = now
                last = now
            conn.close()
        finally:
            resources.install(generator=None, verifier=None)
            resources.close_all()
    return {"per_node": per_node, "attempts": attempts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--prefill", default="0,1000", help="memory items added before the run, comma-separated sizes")
    args = ap.parse_args()
    console = Console()
    for pre in [int(x) for x in args.prefill.split(",")]:
        r = bench(args.tasks, args.budget, pre)
        table = Table("node", "calls", "p50 ms", "p95 ms",
                      title=f"graph overhead, {args.tasks} tasks x T={args.budget}, memory prefilled with {pre} items")
        for node in ("retrieve", "q_filter", "select_start", "generate", "verify", "update", "start_task", "finish_task"):
            xs = r["per_node"].get(node)
            if xs:
                table.add_row(node, str(len(xs)), f"{quantile(xs, .5):.1f}", f"{quantile(xs, .95):.1f}")
        a = r["attempts"][1:]  # the first includes the model load
        gen_ver = [statistics.median(r["per_node"][n]) for n in ("generate", "verify")]
        table.add_row("per attempt (all nodes)", str(len(a)), f"{quantile(a, .5):.1f}", f"{quantile(a, .95):.1f}")
        table.add_row("  of which generate+verify (instant stubs)", "", f"{sum(gen_ver):.1f}", "")
        console.print(table)


if __name__ == "__main__":
    main()
