"""The `evokernel` command line.

    evokernel run [TASK_FILE|DIR|SUITE]... [--limit N] [--generator template|SPEC] [--budget T] [--settings FILE] ...
    evokernel verify TASK_FILE CANDIDATE_FILE [--set NAME=VALUE]... [--fit auto|none] [--json] [--no-daemon]
    evokernel tasks list [SUITE]
    evokernel memory stats|list|show|export|import
    evokernel eval CONFIG [--method M]... [--seeds N] [--workers N] ...   (docs/evaluation.md)
    evokernel report EVAL_OR_RUN_DIR
    evokernel doctor [--backend cpu|ascend-sim|ascend] [--json]   (can this machine run a backend?)

Exit codes of `verify`: 0 feasible, 1 not feasible, 2 bad usage or an unreadable/broken task.
"""
from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from evokernel.cli import ascend as cli_ascend
from evokernel.cli import eval as cli_eval
from evokernel.cli import memory as cli_memory
from evokernel.cli import model as cli_model
from evokernel.cli import run as cli_run
from evokernel.cli.options import Given, err, fit_mode, overrides, with_settings
from evokernel.tasks.fit import describe
from evokernel.tasks.load import load_task, load_tasks, skipped_files
from evokernel.tasks.task import TaskError, suite_names

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="EvoKernel: LLM-written kernels judged by an honest, sandboxed verifier.")
tasks_app = typer.Typer(no_args_is_help=True, help="Browse tasks and built-in suites.")
app.add_typer(tasks_app, name="tasks")


def _print_verdict(result: object, as_json: bool, task_fit: dict | None = None, server: dict | None = None) -> None:
    if as_json:
        data = result.to_json()
        if task_fit is not None:
            data["task_fit"] = task_fit  # the sizes the verdict is about
        if server is not None:
            data["server"] = server  # the warm verifier that judged it (pid, verdicts served, code version)
        print(json.dumps(data, indent=None, default=str))
        return
    print(result.summary())
    if result.feasible and result.details.get("profile"):
        kind = "modelled" if result.latency_kind == "estimate" else "measured"
        print(f"profile ({kind}):\n  " + result.details["profile"].replace("\n", "\n  "))
    baseline = result.details.get("compile_baseline") or {}
    if result.feasible and baseline.get("ok") is False:  # asked for, but torch.compile fails on this task
        print(f"no speedup vs torch.compile: {str(baseline.get('error')).splitlines()[0][:300]}")
    for w in result.details.get("emulator_warnings") or []:
        print(f"warning: {w}")
    judge = result.details.get("llm_judge")
    if judge and result.feasible:
        said = {True: "flagged it", False: "found it honest", None: f"gave no verdict ({judge.get('error')})"}
        print(f"LLM judge ({judge.get('model')}): {said[judge.get('flagged')]}"
              + (f": {judge.get('reason')}" if judge.get("reason") else ""))


def _sandbox_warning(sandbox: str) -> None:
    if sandbox != "bwrap":
        err.print("warning: bubblewrap (bwrap) is not available: candidates ran with rlimits and seccomp "
                  "only; the filesystem was not hidden (apt-get install bubblewrap)")


# the run settings verify shares with run (their options come from evokernel.settings)
VERIFY_SETTINGS = ("backend", "fit", "strict", "compile_baseline", "llm_judge")


@app.command()
@with_settings(VERIFY_SETTINGS)
def verify(
    task_file: Annotated[Optional[Path], typer.Argument(help="KernelBench-format task file (Model, get_inputs, get_init_inputs)")] = None,
    candidate_file: Annotated[Optional[Path], typer.Argument(help="candidate source defining ModelNew")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a module-level size constant, NAME=VALUE (repeatable)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object instead of text")] = False,
    trials: Annotated[int, typer.Option(min=1, help="standard correctness trials (plus 4 perturbed ones: scaled, negated, shifted, heavy-tailed)")] = 4,
    threads: Annotated[int, typer.Option(min=1, help="threads for both candidate and reference")] = 1,
    timing: Annotated[bool, typer.Option(help="measure latency of feasible candidates")] = True,
    seed: Annotated[Optional[int], typer.Option(help="fix the otherwise secret seeds (for reproducing a verdict)")] = None,
    timeout: Annotated[float, typer.Option(help="seconds per forward call, on top of 50x the reference time")] = 20.0,
    serve: Annotated[bool, typer.Option("--serve", help="run the warm verifier in the foreground (otherwise the first `evokernel verify` starts it in the background); stops on Ctrl-C, SIGTERM, --stop-server or --idle-timeout")] = False,
    stop_server: Annotated[bool, typer.Option("--stop-server", help="stop the warm verifier for this backend and --threads")] = False,
    no_daemon: Annotated[bool, typer.Option("--no-daemon", "--no-server", help="verify in this process: neither start nor use the warm background verifier")] = False,
    idle_timeout: Annotated[Optional[float], typer.Option(help="with --serve: stop after this many seconds without a request")] = None,
    socket_file: Annotated[Optional[Path], typer.Option("--socket", help="use (or with --serve, listen on) this socket instead of the per-user background verifier")] = None,
    *,
    settings: Given,
) -> None:
    """Judge CANDIDATE_FILE against TASK_FILE: anti-hack, compile, correctness and latency gates.

    The verdict comes from a warm verifier in the background (one per user, backend and --threads, started
    by the first call, stopped when idle): the same checks, without starting sandboxes and importing torch
    for every call. --no-daemon verifies in this process."""
    from evokernel.cli import verify_daemon  # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.cli import verify_server  # lazy: as above

    backend, fit, strict, compile_baseline, llm_judge = (settings.values[k] for k in VERIFY_SETTINGS)

    if serve:
        try:
            if socket_file is not None:
                verify_server.serve(backend, threads, socket_file, idle_timeout)
            else:
                verify_daemon.serve(backend, threads, idle_timeout)
        except verify_daemon.DaemonError as exc:
            err.print(f"error: {exc}")
            raise typer.Exit(2)
        return
    if stop_server:
        if socket_file is None:
            try:
                stopped = verify_daemon.stop(backend, threads)
            except verify_daemon.DaemonError as exc:
                stopped, why = False, str(exc)
            else:
                why = "none is running"
            if not stopped:
                err.print(f"no warm verifier to stop: {why}")
                raise typer.Exit(1)
            err.print(f"stopped the warm verifier (backend {backend}, {threads} thread(s))")
            return
        try:
            verify_server.request(socket_file, {"op": "stop"}, timeout=30)
        except verify_server.NoServer as exc:
            err.print(f"no warm verifier to stop: {exc}")
            raise typer.Exit(1)
        err.print(f"stopped the warm verifier at {socket_file}")
        return
    if task_file is None or candidate_file is None:
        err.print("error: verify needs TASK_FILE and CANDIDATE_FILE (or --serve / --stop-server)")
        raise typer.Exit(2)
    fit = fit_mode(fit)
    try:
        task = load_task(task_file, overrides(set_), fit=fit, backend=backend)
    except TaskError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)
    if fit == "auto":
        err.print(describe(task), highlight=False)
    try:
        source = candidate_file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        err.print(f"error: cannot read candidate file: {exc}")
        raise typer.Exit(2)
    path: Optional[Path] = socket_file
    if path is None and not no_daemon:
        try:
            with err.status(f"starting the warm {backend} verifier in the background..."):
                path, _ = verify_daemon.ensure(backend, threads)
        except verify_daemon.DaemonError as exc:
            err.print(f"note: {exc}; verifying in this process")
    if path is not None:
        # the fitted sizes travel as overrides: the server rewrites the same constants, so it judges the same source
        msg = {"op": "verify", "task_path": str(Path(task_file).resolve()), "overrides": task.applied_overrides,
               "candidate": source,
               "backend": backend, "threads": threads, "strict": strict, "trials": trials, "timing": timing,
               "compile_baseline": compile_baseline, "seed": seed, "timeout": timeout}
        if socket_file is None:
            msg["version"] = verify_daemon.code_version()
        try:
            reply = verify_server.request(path, msg)
        except verify_server.NoServer as exc:
            err.print(f"note: {exc}; verifying in this process")
        else:
            if reply.get("ok"):
                # lazy: the verifier imports torch: only for an in-process verdict
                from evokernel.verifier.verdict import Verdict

                result = _judged(Verdict(**reply["verdict"]), task, source, llm_judge)
                _sandbox_warning(str(reply.get("sandbox")))
                _print_verdict(result, as_json, task.fit, reply.get("server"))
                raise typer.Exit(0 if result.feasible else 1)
            if not reply.get("incompatible"):
                err.print(f"error: {reply.get('error')}")
                raise typer.Exit(int(reply.get("exit", 2)))
            err.print(f"note: the warm verifier cannot serve this request ({reply['incompatible']}); "
                      "verifying in this process")
    _verify_here(task, source, candidate_file, backend, strict, trials, threads, timing, compile_baseline, seed,
                 timeout, as_json, llm_judge)


def _judged(result: Any, task: Any, source: str, spec: Optional[str]) -> Any:
    """The verdict after the optional LLM judge (only a feasible verdict is read)."""
    if not spec or not result.feasible:
        return result
    from evokernel.verifier.trusted import llm_judge  # lazy: the verifier imports torch: only for an in-process verdict

    try:
        judge = llm_judge.LLMJudge(spec)
    except Exception as exc:  # noqa: BLE001 - a bad spec, a missing key, a model that will not start
        err.print(f"error: --llm-judge {spec}: {exc}")
        raise typer.Exit(2)
    with err.status(f"the LLM judge ({judge.name}) reads the candidate..."):
        return llm_judge.apply(result, judge.review(task.source, source))


def _verify_here(task: object, source: str, candidate_file: Path, backend: str, strict: bool, trials: int,
                 threads: int, timing: bool, compile_baseline: bool, seed: Optional[int], timeout: float,
                 as_json: bool, llm_judge: Optional[str] = None) -> None:
    # lazy: the verifier imports torch: only for an in-process verdict
    from evokernel.verifier.trusted.correctness import DEFAULT_TOL, STRICT_TOL
    from evokernel.verifier.trusted.launcher import SandboxError
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    config = VerifyConfig(tol=STRICT_TOL if strict else DEFAULT_TOL, trials=trials, threads=threads, timing=timing,
                          compile_baseline=compile_baseline, seed=seed, run_timeout_s=timeout)
    try:
        # a spinner on stderr (terminals only): cold native builds take tens of seconds
        with err.status(f"starting the {backend} verifier...") as status, Verifier(backend, config) as verifier:
            status.update(f"verifying {candidate_file.name} against {task.name} "
                          f"(backend {backend}, sandbox {verifier.sandbox}; cold native builds take a while)")
            result = verifier.verify(task, source)
            _sandbox_warning(verifier.sandbox)
    except TaskError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)
    except ValueError as exc:  # unknown backend
        err.print(f"error: {exc}")
        raise typer.Exit(2)
    except SandboxError as exc:  # an environment problem, not a verdict
        err.print(f"error: {exc}")
        raise typer.Exit(2)
    result = _judged(result, task, source, llm_judge)
    _print_verdict(result, as_json, getattr(task, "fit", None))
    raise typer.Exit(0 if result.feasible else 1)


@tasks_app.command("list")
def tasks_list(
    suite: Annotated[Optional[str], typer.Argument(help="suite name (cpu-l1, cpu-l2, npu-l1, npu-l2), task directory or file")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """List built-in suites, or the tasks of one suite/directory."""
    if suite is None:
        rows = [(name, len(load_tasks(name))) for name in suite_names()]
        if as_json:
            print(json.dumps([{"suite": n, "tasks": c} for n, c in rows]))
            return
        table = Table("suite", "tasks", title="built-in suites (evokernel tasks list SUITE)")
        for name, count in rows:
            table.add_row(name, str(count))
        Console().print(table)
        return
    try:
        tasks = load_tasks(suite)
    except TaskError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2)
    for line in skipped_files(tasks):  # one line per file of the directory that does not load
        err.print(f"skipped {line}")
    if as_json:
        from evokernel.tasks.category import infer_op_mix  # lazy: the category probe traces with torch

        print(json.dumps([{"name": t.name, "category": t.category, "path": str(t.path), "constants": t.constants,
                           "description": t.description, "cases": len(t.cases),
                           **({"op_mix": infer_op_mix(t)} if t.category == "model" else {})} for t in tasks],
                         default=str))
        return
    table = Table("task", "category", "sizes", "description", title=f"{suite}: {len(tasks)} tasks")
    for t in tasks:
        sizes = " ".join(f"{k}={v}" for k, v in t.constants.items() if isinstance(v, (int, float)))
        if t.cases:
            sizes = f"{len(t.cases)} cases {sizes}".strip()
        table.add_row(t.name, t.category, sizes, t.description)
    Console(width=160).print(table)


@app.command()
def doctor(
    backend: Annotated[str, typer.Option(help="backend to check: cpu, ascend-sim or ascend (a real NPU with CANN)")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object instead of a table")] = False,
) -> None:
    """Check whether this machine can run BACKEND: one row per requirement (ok / warn / FAIL). Exit 1 on a FAIL."""
    from rich.text import Text  # lazy: start-up: `evokernel --help` imports every command module

    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.cli.doctor import FAIL, WARN, failed, report, run_checks, targets

    if backend not in targets():
        err.print(f"error: unknown backend {backend!r}; choose one of {', '.join(targets())}")
        raise typer.Exit(2)
    if as_json:
        checks = run_checks(backend)
        print(json.dumps(report(backend, checks)))
        raise typer.Exit(1 if failed(checks) else 0)
    with err.status(f"checking the {backend} backend..."):
        checks = run_checks(backend)
    style = {FAIL: "bold red", WARN: "yellow"}
    table = Table(title=f"evokernel doctor --backend {backend}", show_lines=True)
    for col in ("check", "status", "detail", "remedy"):
        table.add_column(col, overflow="fold")
    for c in checks:
        # details quote tool output: plain Text, never rich markup
        table.add_row(Text(c.name), Text(c.status, style=style.get(c.status, "green")), Text(c.detail), Text(c.remedy))
    out = Console() if Console().is_terminal else Console(width=120)  # pipes: wide enough for paths
    out.print(table)
    counts = report(backend, checks)["counts"]
    verdict = "[bold red]cannot run[/]" if failed(checks) else "[green]ready[/]"
    out.print(f"{backend}: {verdict} ({counts['ok']} ok, {counts['warn']} warn, {counts['FAIL']} FAIL)")
    raise typer.Exit(1 if failed(checks) else 0)


def _mount() -> None:
    app.command("run")(cli_run.run)
    app.command("eval")(cli_eval.eval_cmd)
    app.command("report")(cli_eval.report_cmd)
    app.add_typer(cli_memory.app, name="memory", help="Inspect, export and import the memory (items and values).")
    app.add_typer(cli_model.app, name="model", help="Local GGUF models for --model local:NAME: fetch, verify, servers.")
    app.add_typer(cli_ascend.app, name="ascend", help="Ascend C operator projects as others write them: import one "
                                                      "as a candidate.")


_mount()


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # an explicit SIGINT stops a run or an eval cleanly, even when the shell that started us in the
    # background set it to "ignore" (which Python would otherwise keep)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
