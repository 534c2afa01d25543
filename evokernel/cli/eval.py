"""`evokernel eval CONFIG` (run the paper's protocol) and `evokernel report DIR` (tables and figures).

The eval's run-section options are the run settings (:mod:`evokernel.settings`). The harness, its engine (Ray)
and the report (matplotlib) are imported inside the commands: other commands load this module and must not
pay for them."""
from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from evokernel.cli.options import Given, err, overrides, with_settings
from evokernel.runtime import stop_request
from evokernel.settings import eval_run_fields
from evokernel.tasks.fit import describe_fit
from evokernel.tasks.task import TaskError


def _seeds(value: str | None) -> Any:
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        return [int(x) for x in value.replace(",", " ").split()]
    except ValueError:
        raise typer.BadParameter(f"--seeds takes a count (3) or a list (0,1,2), not {value!r}") from None


def _generators(values: list[str] | None) -> list[str] | None:
    """``--generator`` values; the old ``--generator llm --model SPEC`` names the same specs."""
    if not values:
        return None
    specs = [v for v in values if v != "llm"]
    if not specs:
        raise typer.BadParameter("--generator takes the LLM spec itself (e.g. --generator openai:gpt-4o-mini)")
    return specs


def _plan_table(meta: dict[str, Any], budget: int) -> Table:
    n_tasks = len(meta["tasks"])
    table = Table("group", "method", "policy", "memory", "model", "seeds", "units/seed", "attempts",
                  title=f"{meta['name']}: {n_tasks} task(s) in {len(meta['stages'])} stage(s), T={budget}")
    for g in meta["groups"]:
        arms = [a for a in meta["arms"] if a["group"] == g["name"]]
        units = [u for u in meta["units"] if u["arm"].startswith(g["name"] + "/seed-")]
        table.add_row(g["name"], g["method"], g["policy"] or "-", g["memory"], g["model"],
                      ",".join(str(a["seed"]) for a in arms), str(len(units) // max(1, len(arms))),
                      str(len(arms) * n_tasks * budget))
    return table


def _print_fits(tasks: list[dict[str, Any]]) -> None:
    """One line per task whose sizes the fit changed (or could not fit), then a count."""
    fitted = [t for t in tasks if (t.get("fit") or {}).get("mode") == "auto"]
    shown = [t for t in fitted if t["fit"].get("changed") or not t["fit"].get("fits", True)]
    for t in shown:
        err.print(f"  {describe_fit(t['id'], t['fit'])}", highlight=False)
    if fitted:
        err.print(f"--fit auto: {sum(1 for t in fitted if t['fit'].get('changed'))} of {len(tasks)} task(s) scaled "
                  f"down to the backend's budget, the others fit as written", highlight=False)


@with_settings([f.name for f in eval_run_fields()], optional=True)
def eval_cmd(
    config: Annotated[Optional[Path], typer.Argument(help="TOML or YAML config file (fields: docs/evaluation.md); "
                                                          "omit it to continue the eval in --out")] = None,
    name: Annotated[Optional[str], typer.Option(help="name of the evaluation")] = None,
    out: Annotated[Optional[Path], typer.Option(help="output directory [default: eval-runs/<name>]")] = None,
    task: Annotated[Optional[list[str]], typer.Option("--task", help="suite, task directory, task file or suite/task id (repeatable; replaces the config's tasks)")] = None,
    limit: Annotated[Optional[int], typer.Option(min=0, help="only the first N tasks of each --task entry")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="size override NAME=VALUE for tasks defining NAME (repeatable)")] = None,
    generator: Annotated[Optional[list[str]], typer.Option("--generator", "--model", help="template or an LLM spec (repeatable: one group per generator; replaces the config's generators; --model: the old spelling)")] = None,
    seeds: Annotated[Optional[str], typer.Option(help="a count (3 means 0,1,2) or a list (0,1,2)")] = None,
    method: Annotated[Optional[list[str]], typer.Option("--method", help="evokernel, passk or refinement (repeatable)")] = None,
    policy: Annotated[Optional[list[str]], typer.Option("--policy", help="value, similarity, random or none (repeatable: the retrieval ablation)")] = None,
    memory: Annotated[Optional[list[str]], typer.Option("--memory", help="shared, ordered, fresh, per-task or exported (repeatable)")] = None,
    variant: Annotated[Optional[list[str]], typer.Option("--variant", help="POLICY/MEMORY pair of evokernel instead of the policies × memory product (repeatable), e.g. value/exported")] = None,
    memory_from: Annotated[Optional[Path], typer.Option(help="export file for memory mode exported")] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="units run at the same time, each its own process")] = None,
    ray: Annotated[Optional[str], typer.Option("--ray", help="where units run: auto (the cluster in RAY_ADDRESS, else a local Ray), local, or a cluster address HOST:PORT (docs/scale-out.md)")] = None,
    memory_server: Annotated[Optional[bool], typer.Option("--memory-server/--no-memory-server", help="with workers > 1, also shard shared-memory streams over one Chroma server per arm")] = None,
    trajectory: Annotated[Optional[list[str]], typer.Option("--trajectory", help="task id whose speedup trajectory the report draws (repeatable)")] = None,
    dry_run: Annotated[bool, typer.Option(help="print the plan (groups, arms, attempts) and exit")] = False,
    *,
    settings: Given,
) -> None:
    """Run methods × seeds (and policies, memory modes, models) over a task stream; write report.md,
    summary.json and figures. Run it again to continue an interrupted eval."""
    from evokernel.evals import harness  # lazy: the eval harness (ray, matplotlib), only for `evokernel eval`
    from evokernel.evals.config import ConfigError, load_config, make_config, upgrade
    from evokernel.evals.engine import EngineError

    command = shlex.join(["evokernel", "eval", *sys.argv[2:]]) if len(sys.argv) > 1 else "evokernel eval"
    try:
        flags = {"name": name, "out": str(out) if out else None, "tasks": task, "limit": limit,
                 "set": overrides(set_) if set_ else None, "generators": _generators(generator),
                 "seeds": _seeds(seeds), "methods": method, "policies": policy, "memory": memory, "variants": variant,
                 "memory_from": str(memory_from) if memory_from else None, "workers": workers, "ray": ray,
                 "memory_server": memory_server, "trajectories": trajectory} | settings.given()
        if config is None:
            if out is None or not (out / harness.EVAL_JSON).exists():
                err.print("error: give a config file (evokernel eval CONFIG), or --out DIR of an eval to continue")
                raise typer.Exit(2)
            stored = upgrade(harness.EvalDir(out).load()["config"])
            cfg = make_config(stored | {k: v for k, v in flags.items() if v is not None}, f"{out}/eval.json")
        else:
            cfg = load_config(config, flags)
        if dry_run:
            tasks = harness.resolve_tasks(cfg)
            _print_fits(tasks)
            meta = {"name": cfg.name, "tasks": tasks, **harness.plan(cfg, tasks)}
            Console(width=None if sys.stdout.isatty() else 140).print(_plan_table(meta, cfg.budget))
            total = len(meta["arms"]) * len(tasks) * cfg.budget
            err.print(f"{len(meta['units'])} unit(s), {total} attempts; output {out or cfg.output_dir}")
            return
        ed, meta = harness.prepare(cfg, command, out)
        _print_fits(meta["tasks"])
    except (ConfigError, TaskError) as e:
        err.print(f"error: {e}")
        raise typer.Exit(2)

    runner = harness.Runner(ed, meta, workers=cfg.workers)
    expected = runner.arm_expected()
    err.print(f"eval {meta['name']}: {len(meta['groups'])} group(s) × {len(cfg.seeds)} seed(s), {len(meta['tasks'])} "
              f"task(s), T={cfg.budget}, {sum(expected.values())} attempts, {cfg.workers} worker(s); output {ed.path}")
    t0 = time.perf_counter()
    with Progress(TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=False) as progress:
        done0 = runner.arm_attempts()
        total_bar = progress.add_task("all arms", total=sum(expected.values()), completed=sum(done0.values()))
        bars = {arm: progress.add_task(arm, total=n, completed=done0.get(arm, 0)) for arm, n in expected.items()}

        def show(kind: str, data: dict[str, Any]) -> None:
            if kind == "tick":
                counts = runner.arm_attempts()
                for arm, bar in bars.items():
                    progress.update(bar, completed=counts.get(arm, 0))
                progress.update(total_bar, completed=sum(counts.values()))
            elif kind == "start":
                progress.console.print(f"  {'resume' if data['resume'] else 'start '} {data['unit']}")
            elif kind == "engine":
                res = data["resources"]
                what = "a local Ray (127.0.0.1)" if data["started_here"] else f"the Ray cluster at {data['address']}"
                shown = ", ".join(f"{k} {res[k]:g}" for k in ("CPU", "NPU", "GPU") if k in res)
                progress.console.print(f"  ray    {what}: {data['nodes']} node(s), {shown}")
            elif kind == "lost":
                progress.console.print(f"  lost   {data['unit']} ({data['error']}; {data['attempts']} attempts kept, "
                                       f"runs again with --resume)")
            else:
                extra = f", {data['attempts']} attempts, {data['wall_s']:.0f} s" if "wall_s" in data else ""
                why = f": {data['error']}" if data.get("error") else ""
                progress.console.print(f"  {kind:<6} {data['unit']} (exit {data.get('rc')}{extra}){why}"
                                       + (f"  log: {ed.path / data['log']}" if kind != "done" and data.get("log") else ""))

        def on_event(kind: str, data: dict[str, Any]) -> None:
            with stop_request.deferred():  # a Ctrl-C mid-print would leave the console buffering for good
                show(kind, data)

        runner.on_event = on_event
        try:
            status = runner.run()
        except EngineError as e:
            err.print(f"error: {e}")
            raise typer.Exit(2)
    err.print(f"{status} after {time.perf_counter() - t0:.0f} s")
    _report(ed.path)
    if status == "interrupted":
        err.print(f"interrupted: finished attempts are kept; continue with: evokernel eval --out {ed.path}")
        raise typer.Exit(130)
    if status == "failed":
        bad = [k for k, v in runner.progress.items() if v.get("status") != "done"]
        err.print(f"{len(bad)} unit(s) did not finish ({', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}); "
                  f"see their logs in {ed.path / 'logs'}; run the same command again to retry them")
        raise typer.Exit(1)


def _report(path: Path, out: Path | None = None) -> dict[str, Any] | None:
    try:
        # lazy: the eval harness (ray, matplotlib), only for `evokernel eval`
        from evokernel.evals.report import build_report

        summary = build_report(path, out)
    except Exception as e:  # the results stay on disk; `evokernel report` can retry
        err.print(f"error: the report could not be written: {type(e).__name__}: {e}")
        return None
    dest = out or path
    err.print(f"report: {dest / 'report.md'} (figures in {dest / 'figures'}, numbers in {dest / 'summary.json'})")
    return summary


def report_cmd(
    path: Annotated[Path, typer.Argument(help="an eval directory (eval.json) or a run directory of evokernel run")],
    out: Annotated[Optional[Path], typer.Option(help="write the report here instead of into PATH")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print summary.json")] = False,
) -> None:
    """Regenerate report.md, summary.json and figures/ from a finished or partial eval or run."""
    # lazy: the eval harness (ray, matplotlib), only for `evokernel eval`
    from evokernel.evals.report import ReportError, build_report

    try:
        summary = build_report(path, out)
    except ReportError as e:
        err.print(f"error: {e}")
        raise typer.Exit(2)
    dest = out or path
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        err.print(f"report: {dest / 'report.md'} (figures in {dest / 'figures'}, numbers in {dest / 'summary.json'})")
