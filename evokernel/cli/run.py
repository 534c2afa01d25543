"""`evokernel run`: drafting and refining over a stream of tasks, with one shared memory.

The run directory holds everything (see :mod:`evokernel.runtime.run_dir`); LangGraph checkpoints in it let a
killed run continue with ``--resume`` without redoing finished attempts. Its options are the run settings
(:mod:`evokernel.settings`, through :func:`evokernel.cli.options.with_settings`).

LangGraph, the graph and the run directory are imported inside the functions that use them: ``evokernel --help``
and every other command load this module and must not pay for them.
"""
from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evokernel.cli.options import Given, err, overrides, with_settings
from evokernel.runtime import stop_request
from evokernel.settings import INPUTS, SettingsError, read_settings_file
from evokernel.tasks.fit import describe
from evokernel.tasks.load import fit_tasks, load_tasks
from evokernel.tasks.task import TaskError, _as_value


def _release_local_servers() -> None:
    """On Ctrl-C: a local model's generation in flight would hold the stop for minutes; releasing this
    process's servers makes the call fail at once (the cut attempt is redone on --resume)."""
    if "evokernel.generators.local.server" in sys.modules:
        sys.modules["evokernel.generators.local.server"].shutdown_all()


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=140)


def _fmt(v: Any, spec: str = ".3f", suffix: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{suffix}"


def results_table(summary: dict[str, Any], title: str) -> Table:
    caption = "first at: the attempt (1-based) that gave the first feasible kernel"
    est = summary.get("latency_kind") == "estimate"
    if est:
        caption += ("\nLATENCIES ARE ESTIMATES: modelled by the backend's latency model (ascend-sim), not "
                    "measured; 'vs eager' compares with the modelled eager PyTorch reference")
    unit = "est. us" if est else "ms"  # modelled NPU kernels take microseconds

    def lat(ms: Any) -> str:
        return _fmt(None if ms is None else ms * 1e3, ".2f") if est else _fmt(ms)

    # the torch.compile column only when the run asked for that baseline (a number or a failure on record)
    compiled = any(t.get("speedup_vs_compile") or t.get("compile_error") for t in summary["tasks"])
    if compiled:
        caption += "\nvs compile: the best kernel vs torch.compile of the reference, timed in the same rounds"
    columns = ["task", "feasible", "first at", f"first {unit}", f"best {unit}", "best/first", "vs eager"]
    table = Table(*columns, *(["vs compile"] if compiled else []), "attempts", title=title, caption=caption)
    for t in summary["tasks"]:
        first_at = t["first_feasible_iteration"]
        row = [t["task"], "yes" if t["feasible"] else "no", _fmt(None if first_at is None else first_at + 1, "d"),
               lat(t["first_latency_ms"]), lat(t["best_latency_ms"]), _fmt(t["speedup_vs_first"], ".2f", "x"),
               _fmt(t["speedup_vs_eager"], ".2f", "x")]
        if compiled:
            vs = t.get("speedup_vs_compile")
            row.append("compile failed" if vs is None and t.get("compile_error") else _fmt(vs, ".2f", "x"))
        table.add_row(*row, str(t["attempts"]))
    if len(summary["tasks"]) > 1 and summary.get("geomean_speedup_vs_eager"):
        table.add_section()
        table.add_row("geomean", "", "", "", "", "", _fmt(summary.get("geomean_speedup_vs_eager"), ".2f", "x"),
                      *([_fmt(summary.get("geomean_speedup_vs_compile"), ".2f", "x")] if compiled else []), "")
    return table


@with_settings()
def run(
    targets: Annotated[Optional[list[str]], typer.Argument(help="task files, task directories or suite names (cpu-l1, cpu-l2, npu-l1, npu-l2)")] = None,
    limit: Annotated[Optional[int], typer.Option(min=0, help="only the first N tasks (0: all)", show_default=False)] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a size constant in every task defining it, NAME=VALUE (repeatable)")] = None,
    settings_file: Annotated[Optional[Path], typer.Option("--settings", help="a .toml or .json file of run settings (the option names with underscores: budget = 10, n_context = 4, ...) and optionally the run's tasks, set and limit; options given here override it (docs/loop.md)")] = None,
    resume: Annotated[bool, typer.Option(help="continue the interrupted run in --run-dir with its saved settings")] = False,
    model: Annotated[Optional[str], typer.Option(help="old spelling of --generator SPEC (kept for scripts: --generator llm --model SPEC)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print summary.json instead of the table")] = False,
    *,
    settings: Given,
) -> None:
    """Draft and refine kernels for TARGETS; write attempts, summary and best kernels to the run directory.

    Every run setting is an option below; --settings FILE gives them from a file."""
    file = _read_file(settings_file)
    data = {k: v for k, v in file.items() if k not in INPUTS} | settings.given()
    data = _generator_spelling(data, model)
    if resume:
        started = _resumed(data)
    else:
        targets = list(targets or file.get("tasks") or [])
        sizes = {**_sizes_of(file.get("set")), **_parsed(set_)}
        started = _new(targets, sizes, limit if limit is not None else int(file.get("limit") or 0), data)
    _execute(*started, resume=resume, as_json=as_json)


def _read_file(path: Optional[Path]) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return read_settings_file(path)
    except SettingsError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)


def _sizes_of(data: Any) -> dict[str, Any]:
    """A settings file's ``set`` mapping (JSON gives tuples back as lists)."""
    if not isinstance(data, dict) and data is not None:
        err.print(f"error: set in the settings file must be a mapping NAME = VALUE, not {type(data).__name__}")
        raise typer.Exit(2)
    return {k: _as_value(v) for k, v in (data or {}).items()}


def _parsed(values: Optional[list[str]]) -> dict[str, Any]:
    try:
        return overrides(values)
    except TaskError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)


def _generator_spelling(data: dict[str, Any], model: Optional[str]) -> dict[str, Any]:
    """``--generator SPEC``; the old ``--generator llm --model SPEC`` (and ``--model SPEC``) mean the same."""
    generator = data.get("generator")
    if model:
        if generator not in (None, "template", "llm"):
            err.print(f"error: give the LLM spec once: --generator {generator} or --model {model} (its old spelling)")
            raise typer.Exit(2)
        return data | {"generator": model}
    if generator == "llm":
        err.print("error: --generator takes the LLM spec itself (e.g. --generator openai:gpt-4o-mini); "
                  "--generator llm needs --model SPEC")
        raise typer.Exit(2)
    return data


def _context(data: dict[str, Any]) -> Any:
    from evokernel.graph.context import Context  # lazy: langgraph and torch, only when a run starts

    try:
        return Context(**data)
    except ValueError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)


def _resumed(data: dict[str, Any]) -> tuple[Any, Any, list[str], dict[str, Any]]:
    """(context, inputs, task ids, run.json) of the run in --run-dir, continued with its saved settings; only
    where its memory server and Ray cluster are may change (they may come back on other addresses)."""
    from evokernel.graph.context import Context  # lazy: langgraph and torch, only when a run starts

    run_dir = Path(data["run_dir"]) if data.get("run_dir") else None
    if run_dir is None or not (run_dir / "run.json").exists():
        err.print("error: --resume needs --run-dir of an existing run (a directory with run.json)")
        raise typer.Exit(2)
    meta = json.loads((run_dir / "run.json").read_text())
    stored = dict(meta["settings"]["context"])
    inputs = dict(meta["settings"]["inputs"])
    if "fit" not in stored:  # runs from before the fit became a run setting kept it in the graph's input
        stored["fit"] = inputs.get("fit") or "none"
    inputs.pop("fit", None)
    ctx = Context.coerce(stored)
    for name in ("memory_url", "ray"):
        if data.get(name):
            setattr(ctx, name, data[name])
    return ctx, inputs, list(meta["settings"]["tasks"]), meta


def _new(targets: list[str], sizes: dict[str, Any], limit: int, data: dict[str, Any]) -> tuple[Any, Any, list[str], None]:
    """(context, inputs, task ids, None) of a new run: its tasks loaded and fitted, its run directory made."""
    from evokernel.graph import resources  # lazy: langgraph and torch, only when a run starts
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.runtime.run_dir import RunDir, new_run_id
    from evokernel.tasks.load import skipped_files  # lazy: as above

    if not targets:
        err.print("error: give task files, directories or suite names (e.g. evokernel run cpu-l1 --limit 3)")
        raise typer.Exit(2)
    run_id = data.get("run_id") or new_run_id()
    ctx = _context(data | {"run_id": run_id, "run_dir": data.get("run_dir") or str(Path("runs") / run_id)})
    try:
        loaded = [load_tasks(target, sizes) for target in targets]
        for line in (s for ts in loaded for s in skipped_files(ts)):  # a bad file of a directory: skipped, named
            err.print(f"skipped {line}")
        tasks = [t for ts in loaded for t in ts]
        unused = [name for name in sizes if not any(name in t.overrides for t in tasks)]
        if unused:
            raise TaskError(f"no task defines {', '.join(unused)} (--set applies to tasks defining the constant)")
        # the graph's prepare node fits the same way (cached); a task too large for the machine stops here
        tasks = fit_tasks(tasks[:limit] if limit else tasks, ctx.fit, ctx.backend)
    except TaskError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)
    if ctx.fit == "auto":
        for t in tasks:
            err.print(f"  {describe(t)}", highlight=False)
    if (Path(ctx.run_dir) / "run.json").exists():
        err.print(f"error: {ctx.run_dir} already holds a run; use --resume to continue it or pick another --run-dir")
        raise typer.Exit(2)
    task_ids = [resources.task_id(t) for t in tasks]
    inputs = {"tasks": list(dict.fromkeys(targets)), "overrides": sizes, "limit": limit}
    RunDir(ctx.run_dir, run_id=run_id, settings={"context": ctx.settings(), "tasks": task_ids, "inputs": inputs,
                                                 "task_fit": {tid: t.fit for tid, t in zip(task_ids, tasks)},
                                                 "categories": {tid: t.category for tid, t in zip(task_ids, tasks)}})
    return ctx, inputs, task_ids, None


def _execute(ctx: Any, inputs: Any, task_ids: list[str], meta: dict[str, Any] | None, *, resume: bool,
             as_json: bool) -> None:
    """Stream the graph with a progress bar, then print the results and exit with the run's status."""
    from langgraph.checkpoint.sqlite import SqliteSaver  # lazy: langgraph and torch, only when a run starts

    # lazy: langgraph and torch, only when a run starts
    from evokernel.graph import resources
    from evokernel.graph.main import build_graph

    cfg = {"configurable": {"thread_id": ctx.run_id}}
    conn = sqlite3.connect(str(Path(ctx.run_dir) / "checkpoints.sqlite"), check_same_thread=False)
    app = build_graph(checkpointer=SqliteSaver(conn))
    finished = False
    if resume:
        snap = app.get_state(cfg)
        if not snap.values:  # killed before the first checkpoint: start it with its saved inputs
            pass
        elif not snap.next and not snap.tasks:  # tasks with saved writes (interrupted mid-step) are not done
            finished = True
            err.print(f"run {ctx.run_id} has already finished")
        else:
            inputs = None
    err.print(f"run {ctx.run_id}: {ctx.method}, {len(task_ids)} task(s), T={ctx.budget}, generator {ctx.generator}, "
              f"memory {ctx.memory_url or ctx.memory_dir}, run dir {ctx.run_dir}"
              + (f", {ctx.concurrency} tasks in flight (verifier actors on Ray: {ctx.ray})" if ctx.concurrency > 1 else ""))
    if ctx.concurrency > 1 and not finished:
        _start_pool(ctx)
    t0 = time.perf_counter()
    status = "finished" if finished else _stream(app, inputs, cfg, ctx, len(task_ids) * ctx.budget,
                                                 len(resources.run_dir(ctx).attempts()))
    summary = resources.run_dir(ctx).write_summary(task_ids)
    conn.close()
    # verifier actors release their cores now, while Ray is still connected (at exit Ray may go first)
    resources.close_all()
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        out = _console()
        out.print(results_table(summary, f"run {ctx.run_id} ({time.perf_counter() - t0:.0f} s)"))
        cr, acc = summary["compile_rate"], summary["correctness"]
        out.print(f"compile rate {_fmt(cr and 100 * cr, '.0f', '%')}, correctness {_fmt(acc and 100 * acc, '.0f', '%')}"
                  f" over {len(summary['tasks'])} task(s); best kernels in {Path(ctx.run_dir) / 'best'}")
    if status.startswith("stopped"):
        err.print(status)  # a token/cost cap: a clean end, everything so far is kept
    elif status != "finished":
        err.print(f"{status}\nresume with: evokernel run --resume --run-dir {ctx.run_dir}")
        raise typer.Exit(130 if status == "interrupted" else 1)


def _start_pool(ctx: Any) -> None:
    """The verifier actors start here, on the main thread (Ray's signal handlers), before any attempt."""
    from evokernel.graph import resources  # lazy: langgraph and torch, only when a run starts
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.runtime.ray_cluster import EngineError

    try:
        pool = resources.verifier(ctx)
    except EngineError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)
    err.print(f"verifier actors: " + ", ".join(
        f"{d['host']} cpu {','.join(map(str, d['cpus'])) or '-'}" + (f" npu {d['npus']}" if d.get("npus") else "")
        for d in getattr(pool, "devices", [])))


def _stream(app: Any, inputs: Any, cfg: dict[str, Any], ctx: Any, total: int, done: int) -> str:
    """Run the graph, one progress line per attempt; the run's status ("finished", "stopped: ...", ...)."""
    status = "finished"
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=False) as progress:
        bar = progress.add_task("attempts", total=total, completed=done)
        stream = app.stream(inputs, cfg, context=ctx, stream_mode=["custom", "updates"], subgraphs=True,
                            durability="sync")
        try:
            with stop_request.sigint_requests_stop(on_stop=_release_local_servers):
                for _ns, mode, chunk in stream:
                    if mode == "custom" and chunk.get("event") == "attempt":
                        with stop_request.deferred():  # a SIGINT mid-print would leave the console buffering
                            progress.update(bar, advance=1,
                                            description=f"{chunk['task']} #{chunk['iteration'] + 1} {chunk['stage']}")
                            progress.console.print(_attempt_line(chunk), soft_wrap=True, markup=False)
                    elif mode == "updates" and isinstance(chunk, dict):
                        for update in chunk.values():
                            if isinstance(update, dict) and update.get("stop"):
                                status = f"stopped: {update['stop']}"
        except KeyboardInterrupt:  # the nodes stopped before their next generation (evokernel.runtime.stop_request)
            status = "interrupted"
        except Exception as exc:  # an endpoint that keeps failing, a sandbox that cannot start, ...
            status = f"interrupted by an error: {type(exc).__name__}: {exc}"
    return status


def _attempt_line(chunk: dict[str, Any]) -> str:
    mark = "ok " if chunk["feasible"] else (chunk["failed_gate"] or "x")
    est = bool(chunk.get("estimated"))

    def show(ms: float) -> str:  # modelled NPU kernels take microseconds
        return f"est {ms * 1e3:.2f} us" if est else f"{ms:.3f} ms"

    lat = show(chunk["latency_ms"]) if chunk["latency_ms"] else ""
    best = f"best {show(chunk['best_latency_ms'])}" if chunk.get("best_latency_ms") else ""
    # which experience was stored, when the model was asked for one and it fell back
    reason = chunk.get("experience_reason") or ""
    note = f"  [experience: template, {reason}]" if reason.startswith("fallback") else ""
    return (f"  {chunk['task']:<26} {chunk['iteration'] + 1:>3}/{chunk['budget']} "
            f"{chunk['stage']:<6} {mark:<11} {lat:>11}  {best}{note}")
