"""`evokernel run`: drafting and refining over a stream of tasks, with one shared memory.

The run directory holds everything (see :mod:`evokernel.run`); LangGraph checkpoints in it let a
killed run continue with ``--resume`` without redoing finished attempts.
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

from evokernel import stop_request

err = Console(stderr=True, soft_wrap=True)


def _release_local_servers() -> None:
    """On Ctrl-C: a local model's generation in flight would hold the stop for minutes; releasing this
    process's servers makes the call fail at once (the cut attempt is redone on --resume)."""
    if "evokernel.local_server" in sys.modules:
        sys.modules["evokernel.local_server"].shutdown_all()


def _console() -> Console:
    import sys

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

    table = Table("task", "feasible", "first at", f"first {unit}", f"best {unit}", "best/first", "vs eager", "attempts",
                  title=title, caption=caption)
    for t in summary["tasks"]:
        first_at = t["first_feasible_iteration"]
        table.add_row(t["task"], "yes" if t["feasible"] else "no", _fmt(None if first_at is None else first_at + 1, "d"),
                      lat(t["first_latency_ms"]), lat(t["best_latency_ms"]), _fmt(t["speedup_vs_first"], ".2f", "x"),
                      _fmt(t["speedup_vs_eager"], ".2f", "x"), str(t["attempts"]))
    return table


def run(
    targets: Annotated[Optional[list[str]], typer.Argument(help="task files, task directories or suite names (cpu-l1, cpu-l2, npu-l1, npu-l2)")] = None,
    limit: Annotated[int, typer.Option(min=0, help="only the first N tasks (0: all)")] = 0,
    method: Annotated[str, typer.Option(help="evokernel (the paper's system), passk (T independent samples, one demonstration, no memory) or refinement (repair, then hill-climb; no shared memory)")] = "evokernel",
    backend: Annotated[str, typer.Option(help="target backend: cpu (C++ kernels, measured latency), ascend-sim (Ascend C operator projects on the CPU emulator, latency ESTIMATED by a model of Ascend 910B) or ascend (the same projects built with CANN and measured on a real NPU; see docs/ascend.md and `evokernel doctor --backend ascend`)")] = "cpu",
    generator: Annotated[str, typer.Option(help="template (offline, deterministic) or llm")] = "template",
    model: Annotated[Optional[str], typer.Option(help="LLM spec for --generator llm: openai:MODEL, deepseek:MODEL, ollama:MODEL, vllm:MODEL, PROVIDER:MODEL for any provider of LangChain's init_chat_model (anthropic, google_genai, google_vertexai, bedrock_converse, mistralai, groq, cohere, fireworks, together, xai, azure_openai, huggingface, ...; install its package, e.g. pip install langchain-anthropic), langchain:PROVIDER:MODEL, local:NAME or local:PATH.gguf (a managed llama.cpp server), hybrid:SPEC (the template drafts, SPEC refines) or MODEL (uses OPENAI_API_KEY / OPENAI_BASE_URL); docs/generators.md")] = None,
    budget: Annotated[int, typer.Option("--budget", "-T", min=1, help="attempts per task, drafting and refining together")] = 30,
    memory: Annotated[Optional[Path], typer.Option(help="memory directory, shared across runs [default: $EVOKERNEL_MEMORY or ./evokernel-memory]")] = None,
    memory_url: Annotated[Optional[str], typer.Option(help="Chroma server URL (chroma run) for a memory shared by several processes [env: EVOKERNEL_CHROMA_URL]")] = None,
    run_dir: Annotated[Optional[Path], typer.Option(help="run directory [default: ./runs/<run id>]")] = None,
    resume: Annotated[bool, typer.Option(help="continue the interrupted run in --run-dir with its saved settings")] = False,
    seed: Annotated[int, typer.Option(help="seed of every random choice (ε-greedy, template generator)")] = 0,
    policy: Annotated[str, typer.Option(help="retrieval policy: value (paper), similarity, random, none")] = "value",
    relevance_margin: Annotated[float, typer.Option(min=0.0, help="drafting context: only items whose similarity is within this margin of the best hit (0: off, the paper's top-K; 0.1 measured to drop unrelated operators)")] = 0.0,
    seed_knowledge: Annotated[str, typer.Option(help="seed API knowledge in the prompt: all (the candidate format, then items matching the APIs and category) or format (the candidate-format item only; with --policy none: no memory at all)")] = "all",
    n_context: Annotated[int, typer.Option(min=0, help="N: memory items in the generator's context")] = 4,
    alpha: Annotated[float, typer.Option(help="value step size α")] = 0.1,
    temperature: Annotated[float, typer.Option(help="LLM sampling temperature")] = 0.7,
    max_tokens: Annotated[int, typer.Option(min=0, help="stop cleanly after this many LLM tokens (0: no cap)")] = 0,
    max_cost: Annotated[float, typer.Option(min=0, help="stop cleanly after this many USD of LLM cost (0: no cap)")] = 0.0,
    strict: Annotated[bool, typer.Option(help="strict tolerance atol=rtol=1e-4 (default 1e-2, the paper's)")] = False,
    compile_baseline: Annotated[bool, typer.Option(help="also time torch.compile of the reference (speedup vs torch.compile; +8-20 s per feasible verdict)")] = False,
    recall: Annotated[bool, typer.Option(help="a task's first attempt re-submits the fastest kernel an earlier run on this memory found for the same task and sizes (judged again, then refined); --no-recall drafts from scratch")] = True,
    llm_judge: Annotated[Optional[str], typer.Option(help="second tier of the hack gate: a chat model (e.g. local:qwen2.5-coder-1.5b) reads every feasible candidate and may flag semantic cheating (off by default; docs/verifier.md)")] = None,
    llm_experiences: Annotated[bool, typer.Option(help="with an LLM generator, the model writes each attempt's experience (what was tried, what happened, the lesson; the template sentence when the call fails or the reply is junk); --no-llm-experiences: the template sentence always (docs/memory.md)")] = True,
    distil_every: Annotated[int, typer.Option(min=0, help="with an LLM generator, distil best practices from measured refinements once this many successful ones are pending (0: never; docs/memory.md)")] = 5,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a size constant in every task defining it, NAME=VALUE")] = None,
    fit: Annotated[str, typer.Option("--fit", help="auto: scale each task's size constants down to this backend's memory and time budget (KernelBench sizes are for GPUs; one line per task says what changed; --set values are kept); none: the sizes as written")] = "auto",
    concurrency: Annotated[int, typer.Option(min=1, help="K: tasks in flight at once on one shared memory; K > 1 judges candidates on K warm verifier actors on Ray (docs/scale-out.md: a run with K > 1 is not reproducible from its seed alone)")] = 1,
    ray: Annotated[Optional[str], typer.Option("--ray", help="with --concurrency > 1, where the verifier actors run: auto ($RAY_ADDRESS, else a private local Ray), local, or HOST:PORT of a cluster [default: auto]")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print summary.json instead of the table")] = False,
) -> None:
    """Draft and refine kernels for TARGETS; write attempts, summary and best kernels to the run directory."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from evokernel.cli import _fit_mode, _overrides
    from evokernel.graph import resources
    from evokernel.graph.context import Context
    from evokernel.graph.main import build_graph
    from evokernel.run import RunDir, new_run_id
    from evokernel.tasks import TaskError, fit_tasks, load_tasks

    if resume:
        if run_dir is None or not (run_dir / "run.json").exists():
            err.print("error: --resume needs --run-dir of an existing run (a directory with run.json)")
            raise typer.Exit(2)
        meta = json.loads((run_dir / "run.json").read_text())
        ctx = Context.coerce(meta["settings"]["context"])
        if memory_url:  # a memory server may come back on another address
            ctx.memory_url = memory_url
        if ray:  # and so may a Ray cluster
            ctx.ray = ray
        inputs = None
        task_ids = list(meta["settings"]["tasks"])
        n_tasks = len(task_ids)
    else:
        if not targets:
            err.print("error: give task files, directories or suite names (e.g. evokernel run cpu-l1 --limit 3)")
            raise typer.Exit(2)
        if generator not in ("template", "llm"):
            err.print(f"error: --generator must be template or llm, not {generator!r}")
            raise typer.Exit(2)
        if generator == "llm" and not model:
            err.print("error: --generator llm needs --model (e.g. --model openai:gpt-4o-mini)")
            raise typer.Exit(2)
        fit = _fit_mode(fit)
        try:
            overrides = _overrides(set_)
            tasks = [t for target in targets for t in load_tasks(target, overrides)]
        except TaskError as exc:
            err.print(f"error: {exc}")
            raise typer.Exit(2)
        unused = [name for name in overrides if not any(name in t.overrides for t in tasks)]
        if unused:
            err.print(f"error: no task defines {', '.join(unused)} (--set applies to tasks defining the constant)")
            raise typer.Exit(2)
        if limit:
            tasks = tasks[:limit]
        try:
            tasks = fit_tasks(tasks, fit, backend)  # the graph's prepare node fits the same way (cached)
        except TaskError as exc:
            err.print(f"error: {exc}")
            raise typer.Exit(2)
        if fit == "auto":
            from evokernel.task_fit import describe

            for t in tasks:
                err.print(f"  {describe(t)}", highlight=False)
        run_id = new_run_id()
        run_dir = run_dir or Path("runs") / run_id
        if (run_dir / "run.json").exists():
            err.print(f"error: {run_dir} already holds a run; use --resume to continue it or pick another --run-dir")
            raise typer.Exit(2)
        try:
            ctx = Context(method=method, backend=backend, generator=model if generator == "llm" else "template", budget=budget,
                          memory_dir=str(memory or ""), memory_url=memory_url or "", run_dir=str(run_dir), run_id=run_id,
                          seed=seed, policy=policy, seed_knowledge=seed_knowledge, relevance_margin=relevance_margin, n_context=n_context, alpha=alpha, temperature=temperature,
                          max_tokens=max_tokens, max_cost_usd=max_cost, strict=strict,
                          compile_baseline=compile_baseline, llm_judge=llm_judge or "", concurrency=concurrency, recall=recall,
                          llm_experiences=llm_experiences, distil_every=distil_every,
                          ray=ray or "auto")
        except ValueError as exc:
            err.print(f"error: {exc}")
            raise typer.Exit(2)
        task_ids = [resources.task_id(t) for t in tasks]
        inputs = {"tasks": list(dict.fromkeys(targets)), "overrides": overrides, "fit": fit, "limit": limit}
        RunDir(run_dir, run_id=run_id, settings={"context": ctx.settings(), "tasks": task_ids,
                                                 "inputs": inputs,
                                                 "task_fit": {tid: t.fit for tid, t in zip(task_ids, tasks)},
                                                 "categories": {tid: t.category for tid, t in zip(task_ids, tasks)}})
        n_tasks = len(tasks)

    cfg = {"configurable": {"thread_id": ctx.run_id}}
    conn = sqlite3.connect(str(Path(ctx.run_dir) / "checkpoints.sqlite"), check_same_thread=False)
    app = build_graph(checkpointer=SqliteSaver(conn))
    finished = False
    if resume:
        snap = app.get_state(cfg)
        if not snap.values:  # killed before the first checkpoint: start it with its saved inputs
            inputs = meta["settings"]["inputs"]
        elif not snap.next and not snap.tasks:  # tasks with saved writes (interrupted mid-step) are not done
            finished = True
            err.print(f"run {ctx.run_id} has already finished")
    total = n_tasks * ctx.budget
    done = len(resources.run_dir(ctx).attempts())
    status = "finished"
    t0 = time.perf_counter()
    err.print(f"run {ctx.run_id}: {ctx.method}, {n_tasks} task(s), T={ctx.budget}, generator {ctx.generator}, "
              f"memory {ctx.memory_url or ctx.memory_dir}, run dir {ctx.run_dir}"
              + (f", {ctx.concurrency} tasks in flight (verifier actors on Ray: {ctx.ray})" if ctx.concurrency > 1 else ""))
    if ctx.concurrency > 1 and not finished:
        # the verifier actors start here, on the main thread (Ray's signal handlers), before any attempt
        from evokernel.ray_runtime import EngineError

        try:
            pool = resources.verifier(ctx)
        except EngineError as exc:
            err.print(f"error: {exc}")
            raise typer.Exit(2)
        err.print(f"verifier actors: " + ", ".join(
            f"{d['host']} cpu {','.join(map(str, d['cpus'])) or '-'}" + (f" npu {d['npus']}" if d.get("npus") else "")
            for d in getattr(pool, "devices", [])))
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=False) as progress:
        bar = progress.add_task("attempts", total=total, completed=done)
        stream = [] if finished else app.stream(inputs, cfg, context=ctx, stream_mode=["custom", "updates"],
                                                subgraphs=True, durability="sync")
        try:
            with stop_request.sigint_requests_stop(on_stop=_release_local_servers):
                for _ns, mode, chunk in stream:
                    if mode == "custom" and chunk.get("event") == "attempt":
                        mark = "ok " if chunk["feasible"] else (chunk["failed_gate"] or "x")
                        est = bool(chunk.get("estimated"))

                        def show(ms: float) -> str:  # modelled NPU kernels take microseconds
                            return f"est {ms * 1e3:.2f} us" if est else f"{ms:.3f} ms"

                        lat = show(chunk["latency_ms"]) if chunk["latency_ms"] else ""
                        best = f"best {show(chunk['best_latency_ms'])}" if chunk.get("best_latency_ms") else ""
                        progress.update(bar, advance=1, description=f"{chunk['task']} #{chunk['iteration'] + 1} {chunk['stage']}")
                        # which experience was stored, when the model was asked for one and it fell back
                        reason = chunk.get("experience_reason") or ""
                        note = f"  [experience: template, {reason}]" if reason.startswith("fallback") else ""
                        progress.console.print(f"  {chunk['task']:<26} {chunk['iteration'] + 1:>3}/{chunk['budget']} "
                                               f"{chunk['stage']:<6} {mark:<11} {lat:>11}  {best}{note}",
                                               soft_wrap=True, markup=False)
                    elif mode == "updates" and isinstance(chunk, dict):
                        for update in chunk.values():
                            if isinstance(update, dict) and update.get("stop"):
                                status = f"stopped: {update['stop']}"
        except KeyboardInterrupt:  # the nodes stopped before their next generation (evokernel.stop_request)
            status = "interrupted"
        except Exception as exc:  # an endpoint that keeps failing, a sandbox that cannot start, ...
            status = f"interrupted by an error: {type(exc).__name__}: {exc}"
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
