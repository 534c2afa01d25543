"""False rejections: every honest candidate of the golden corpus through the verifier, one table.

    python -m evokernel.evals.bench.bench_false_rejections [cpu|ascend-sim] [--origin O]... [--stride K] [--limit N]
        [--nonfinite] [--json out.jsonl]

Each item (golden_corpus.py: shipped examples, template drafts, explorations and refinements) is verified
with timing off (correctness trials as configured by default) in one warm verifier with a private build
cache. The table counts, per origin, items and rejections by gate; every rejection is listed with the
first lines of its feedback. Items whose schedule is a legitimately risky knob (``risky``: the template's
``tail=none``, wrong on sizes it does not divide) are counted apart: their correctness rejections are
right answers, not false rejections.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("backend", nargs="?", default="cpu", choices=["cpu", "ascend-sim"])
    ap.add_argument("--origin", action="append", default=[],
                    help="only items of this origin (example, template-draft, template-explore, template-refine; "
                         "repeatable)")
    ap.add_argument("--stride", type=int, default=1, help="every K-th item (a quicker sample of the same spread)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N items (0: all)")
    ap.add_argument("--json", type=Path, help="write one JSON line per item here (as each item finishes)")
    ap.add_argument("--trials", type=int, default=0, help="correctness trials per item (0: the default)")
    ap.add_argument("--nonfinite", action="store_true",
                    help="add the trial with a few NaN/Inf inputs (off by default in the verifier: this measures it)")
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.progress import track
    from rich.table import Table

    from evokernel.evals.bench.golden_corpus import corpus
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    items = list(corpus(args.backend))
    if args.origin:
        items = [i for i in items if i.origin in args.origin]
    items = items[:: max(1, args.stride)]
    if args.limit:
        items = items[: args.limit]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="evk-golden-") as cache:
        config = VerifyConfig(cache_dir=Path(cache), timing=False)
        if args.trials:
            config.trials = args.trials
        if args.nonfinite:
            config.perturbations = (*config.perturbations, "nonfinite")
        verifier = Verifier(args.backend, config)
        sink = args.json.open("w") if args.json else None
        verifier.start()
        try:
            for item in track(items, description=f"verifying {len(items)} golden {args.backend} items"):
                t0 = time.perf_counter()
                try:
                    v = verifier.verify(item.task, item.source)
                    gate, feedback = (None if v.feasible else v.failed_gate), v.feedback
                except Exception as exc:  # noqa: BLE001 - a crash is a finding, reported like a gate
                    gate, feedback = "crash", f"{type(exc).__name__}: {exc}"
                rows.append({"label": item.label, "origin": item.origin, "risky": item.risky, "gate": gate,
                             "seconds": round(time.perf_counter() - t0, 2), "feedback": feedback[:2000]})
                if sink is not None:
                    sink.write(json.dumps(rows[-1]) + "\n")
                    sink.flush()
        finally:
            verifier.close()
            if sink is not None:
                sink.close()

    by_origin: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        key = r["origin"] + (" (risky tail)" if r["risky"] else "")
        by_origin[key]["items"] += 1
        by_origin[key][r["gate"] or "feasible"] += 1
    gates = sorted({g for c in by_origin.values() for g in c} - {"items", "feasible"})
    table = Table(title=f"golden corpus, backend {args.backend}: honest candidates the verifier rejected")
    for col in ["origin", "items", "feasible", *gates]:
        table.add_column(col, justify="left" if col == "origin" else "right")
    for origin, c in sorted(by_origin.items()):
        table.add_row(origin, str(c["items"]), str(c["feasible"]), *[str(c[g]) for g in gates])
    console = Console()
    console.print(table)
    honest = [r for r in rows if not r["risky"]]
    rejected = [r for r in honest if r["gate"]]
    console.print(f"false rejections: {len(rejected)} of {len(honest)} non-risky items "
                  f"({100 * len(rejected) / max(1, len(honest)):.1f}%); median seconds per item "
                  f"{sorted(r['seconds'] for r in rows)[len(rows) // 2] if rows else 0:.2f}")
    for r in rejected:
        first = " | ".join(r["feedback"].strip().splitlines()[:3])
        console.print(f"  [{r['gate']}] {r['label']} ({r['origin']}): {first[:300]}", markup=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
