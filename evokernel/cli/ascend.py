"""`evokernel ascend ...`: Ascend C operator projects as others write them.

    evokernel ascend import DIR [-o FILE]   an msopgen op project (<Op>.json, op_host/, op_kernel/) as a
                                            candidate file, its sources unchanged (evokernel/ascend_import.py)
    evokernel ascend mkb RUN_DIR --mkb PATH judge a MultiKernelBench run of Ascend C replies on ascend-sim
                                            against MultiKernelBench's references (evokernel/tasks/mkb.py)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                  help="Ascend C operator projects as others write them: import one as a candidate, judge a "
                       "MultiKernelBench run.")
err = Console(stderr=True, soft_wrap=True, highlight=False)


@app.command("import")
def import_cmd(
    project: Annotated[Path, typer.Argument(help="the op project: the folder holding <Op>.json, or the one above "
                                                 "it, with op_host/ and op_kernel/")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="candidate file to write [default: print it]")] = None,
    out_shape: Annotated[Optional[str], typer.Option(
        "--out-shape", help="the output's sizes over the inputs as a C++ braced list, e.g. '{a.size(0), b.size(1)}' "
                            "for a matmul [default: the first input's]")] = None,
) -> None:
    """Wrap an msopgen op project in a candidate file, its json, tiling, host and kernel sources unchanged;
    the PyTorch binding and ModelNew are generated from the json."""
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.ascend_import import ImportError_, import_project

    try:
        p, text = import_project(project, out, out_shape)
    except ImportError_ as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True)
        raise typer.Exit(2)
    if out is None:
        print(text)
    else:
        err.print(f"{p.op} ({p.snake}) -> {out}")
        for name, path in p.files.items():
            err.print(f"  {name:18s} {path}")
        err.print(f"check it: evokernel verify TASK {out} --backend ascend-sim")


@app.command("mkb")
def mkb_cmd(
    run_dir: Annotated[Path, typer.Argument(help="a MultiKernelBench run folder of Ascend C replies: <op>.txt per "
                                                 "operator (output/ascendc/<strategy>/<temp>-<top_p>/<model>/run<n>)")],
    mkb: Annotated[Optional[Path], typer.Option("--mkb", help="MultiKernelBench: a checkout (with reference/) or "
                                                              "a bare git mirror of it [default: $EVOKERNEL_MKB]")] = None,
    categories: Annotated[Optional[list[str]], typer.Option("--category", "-c", help="only these reference "
                                                           "categories (repeatable) [default: every reply]")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="result JSON to write [default: RUN_DIR/"
                                                "result_<categories>.json, as MultiKernelBench names it]")] = None,
    fit: Annotated[str, typer.Option("--fit", help="scale the references' size constants to the emulator: auto "
                                                   "(as needed) or none")] = "auto",
    trials: Annotated[int, typer.Option(min=1, help="standard correctness trials (plus 4 perturbed ones)")] = 4,
) -> None:
    """Judge every Ascend C reply of a MultiKernelBench run on the ascend-sim emulator against its reference;
    write the results in MultiKernelBench's shape (plus EvoKernel's gate and feedback) and print a table."""
    # lazy: start-up: `evokernel --help` imports every command module
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.tasks.mkb import MKBError, default_mkb, judge_run
    # lazy: the verifier imports torch: only for an in-process verdict
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    if fit not in ("auto", "none"):
        err.print("error: --fit is auto or none")
        raise typer.Exit(2)
    mkb = mkb or default_mkb()
    if mkb is None:
        err.print("error: where is MultiKernelBench? --mkb PATH (a checkout or a bare git mirror) or EVOKERNEL_MKB")
        raise typer.Exit(2)
    cats = categories or []
    n = len([p for p in run_dir.glob("*.txt") if not p.stem.endswith("_cot")]) if run_dir.is_dir() else 0
    try:
        with Verifier("ascend-sim", VerifyConfig(trials=trials)) as verifier, \
                Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                         console=err, transient=True) as bar:
            job = bar.add_task("judging", total=n or None)

            def progress(op: str) -> None:
                bar.update(job, advance=1, description=f"judging {op}")

            results = judge_run(run_dir, mkb, verifier.verify, categories=cats, fit=fit, progress=progress)
    except MKBError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True)
        raise typer.Exit(2)
    target = out or run_dir / (f"result_{'_'.join(cats)}.json" if cats else "result.json")
    target.write_text(json.dumps(results, indent=2))
    table = Table("op", "category", "compiled", "correct", "modelled latency", "gate / why", title=str(run_dir))
    for op, r in results.items():
        perf = r.get("performance") or {}
        why = (r.get("evokernel") or {}).get("gate", "") if r["correctness"] else \
            " ".join(r["correctness_info"].split())[:110]
        table.add_row(op, r["category"] or "-", "yes" if r["compiled"] else "no", "yes" if r["correctness"] else "no",
                      f"{perf['latency_us']:.2f} us" if perf else "-", why)
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    ok = sum(r["correctness"] for r in results.values())
    err.print(f"{ok} of {len(results)} correct; results in {target}")
