"""The binary judge's false rejections: every distinct native source of the golden corpus built and judged.

    python -m evokernel.evals.bench.bench_binary_judge [--limit N] [--json out.jsonl]

Each honest cpu candidate of the golden corpus (golden_corpus.py: shipped examples, template drafts,
explorations and refinements) is read for its native sources -- the ``load_cpp(SOURCE, extra_cflags=...)``
and ``load_inline(name=..., cpp_sources=..., functions=..., extra_cflags=...)`` calls, whose arguments are
module-level string constants -- and each distinct source is built as the verifier builds it (its own object,
sandboxed, judged) in a private cache. Much faster than bench_false_rejections (no correctness trials): it
isolates the judge. Prints one row per origin: sources, refused, median build seconds; lists every refusal.
"""
from __future__ import annotations

import argparse
import ast
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator


def _constants(tree: ast.Module) -> dict[str, Any]:
    consts: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                consts[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                pass
    return consts


def _value(node: ast.AST, consts: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, consts) for e in node.elts]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return None


def native_builds(source: str) -> Iterator[tuple[str, Any]]:
    """("cpp", (source, flags)) and ("inline", spec) for each native build a candidate file asks for."""
    tree = ast.parse(source)
    consts = _constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", ""))
        kw = {k.arg: _value(k.value, consts) for k in node.keywords}
        if name == "load_cpp" and node.args:
            src = _value(node.args[0], consts)
            if isinstance(src, str):
                yield "cpp", (src, tuple(kw.get("extra_cflags") or ()))
        elif name == "load_inline":
            srcs = kw.get("cpp_sources")
            yield "inline", {"name": kw.get("name") or "ext", "cpp_sources": [srcs] if isinstance(srcs, str) else
                             list(srcs or []), "functions": kw.get("functions") or [],
                             "extra_cflags": list(kw.get("extra_cflags") or [])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=0, help="only the first N distinct sources (0: all)")
    ap.add_argument("--json", type=Path, help="one JSON line per distinct source")
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.progress import track
    from rich.table import Table

    from evokernel.cpu import CompileError
    from evokernel.evals.bench.golden_corpus import corpus
    from evokernel.verifier.backends.cpu import CpuBackend
    from evokernel.verifier.trusted import binary_judge, native_build

    builds: dict[str, tuple[str, str, Any]] = {}  # key -> (origin, label, build)
    for item in corpus("cpu"):
        for kind, build in native_builds(item.source):
            key = json.dumps([kind, build], sort_keys=True, default=list)
            builds.setdefault(key, (item.origin, item.label, (kind, build)))
    rows = list(builds.values())[: args.limit or None]
    cache = Path(tempfile.mkdtemp(prefix="evk-judge-bench-"))
    backend = CpuBackend(cache)
    stats: dict[str, dict[str, Any]] = defaultdict(lambda: {"n": 0, "refused": 0, "failed": 0, "seconds": []})
    refusals: list[str] = []
    out = args.json.open("w") if args.json else None
    for origin, label, (kind, build) in track(rows, description="building and judging"):
        t0 = time.perf_counter()
        try:
            if kind == "cpp":
                result = native_build.build_cpp(build[0], build[1], cache, backend._runner, 600, judge=True)
            else:
                result = native_build.build_inline(build, cache, backend._runner, 900, judge=True)
            found = [str(f) for f in binary_judge.judge(result.facts, kind, binary_judge.policy(kind))]
            error = ""
        except CompileError as exc:
            found, error = [], str(exc)[:300]
        seconds = time.perf_counter() - t0
        st = stats[f"{origin} ({kind})"]
        st["n"] += 1
        st["seconds"].append(seconds)
        st["refused"] += bool(found)
        st["failed"] += bool(error)
        if found or error:
            refusals.append(f"{label} [{kind}]: {'; '.join(found) or 'does not build: ' + error}")
        if out:
            out.write(json.dumps({"label": label, "origin": origin, "kind": kind, "refused": found, "error": error,
                                  "seconds": round(seconds, 3)}) + "\n")
            out.flush()
    table = Table(title="binary judge over the golden corpus's distinct native sources")
    for col in ("origin", "sources", "refused", "build failed", "median build s"):
        table.add_column(col)
    for origin, st in sorted(stats.items()):
        table.add_row(origin, str(st["n"]), str(st["refused"]), str(st["failed"]),
                      f"{statistics.median(st['seconds']):.2f}")
    console = Console()
    console.print(table)
    for line in refusals:
        console.print(f"- {line}")
    return 1 if refusals else 0


if __name__ == "__main__":
    raise SystemExit(main())
