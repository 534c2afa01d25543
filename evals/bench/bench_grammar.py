"""Drafting requests to a local model with and without the candidate grammar (evokernel/generators/grammar.py).

    python -m evokernel.evals.bench.bench_grammar                                  # grammar on, the default
    python -m evokernel.evals.bench.bench_grammar --no-grammar --seeds 1,2,3
    python -m evokernel.evals.bench.bench_grammar --tasks 08_sum_dim,15_matmul --jsonl out.jsonl

Each (task, seed) is one drafting request with no memory (the prompt of the weak-backbone eval's arm (a)) to
the managed local model; a row says whether a candidate came out (and after how many repair requests), the
tokens written and the seconds taken. Extraction only: run the candidates through `evokernel verify` (or an
eval) for verdicts. Needs `pip install -e '.[local]'` and a fetched model; ~40-90 s per request on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[2]
TASKS = "08_sum_dim,15_matmul,27_cross_entropy"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    ap.add_argument("--tasks", default=TASKS, help="cpu-l1 task file stems, comma-separated")
    ap.add_argument("--seeds", default="1,2", help="sampling seeds, comma-separated")
    ap.add_argument("--no-grammar", action="store_true", help="send no grammar (EVOKERNEL_LOCAL_GRAMMAR=0)")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--jsonl", type=Path, help="also write every reply and candidate here")
    args = ap.parse_args(argv)
    if args.no_grammar:
        os.environ["EVOKERNEL_LOCAL_GRAMMAR"] = "0"

    from evokernel.generators.base import GenerationError, GenerationRequest
    from evokernel.generators.llm import make_generator
    from evokernel.tasks.load import load_task

    gen = make_generator(args.model, temperature=args.temperature)
    rows = []
    out = args.jsonl.open("w") if args.jsonl else None
    for stem in args.tasks.split(","):
        task = load_task(ROOT / "evokernel" / "suites" / "cpu_l1" / f"{stem.strip()}.py")
        for seed in (int(s) for s in args.seeds.split(",")):
            t0 = time.monotonic()
            try:
                g = gen.generate(GenerationRequest(task=task, stage="draft", seed=seed))
                row = {"task": stem, "seed": seed, "ok": True, "tokens_out": g.tokens_out, "reply": g.reply,
                       "candidate": g.source, "error": ""}
            except GenerationError as exc:
                row = {"task": stem, "seed": seed, "ok": False, "tokens_out": exc.tokens_out, "reply": exc.reply,
                       "candidate": "", "error": str(exc)}
            row |= {"seconds": time.monotonic() - t0, "repairs": gen.last_call.get("repairs", 0)}
            rows.append(row)
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
    if out:
        out.close()
    t = Table(title=f"{args.model}, grammar {'off' if args.no_grammar else 'on'}: drafting requests, no memory")
    for col in ("task", "seed", "candidate", "repairs", "tokens out", "seconds", "error"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["task"], str(r["seed"]), "yes" if r["ok"] else "no", str(r["repairs"]), str(r["tokens_out"]),
                  f"{r['seconds']:.0f}", r["error"][:80])
    ok = sum(r["ok"] for r in rows)
    t.add_row("all", "", f"{ok}/{len(rows)}", "", f"median {statistics.median(r['tokens_out'] for r in rows):.0f}",
              f"median {statistics.median(r['seconds'] for r in rows):.0f}", "")
    Console().print(t)


if __name__ == "__main__":
    main()
