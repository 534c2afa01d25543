"""The outer graph: a stream of tasks through one shared memory (cross-task transfer).

    prepare → start_task → drafting → refining → finish_task → start_task … → END

Each task gets the budget T, shared by its drafting and refining stages; the memory (items and
values) carries over from task to task, so easy operators teach hard ones.

With ``concurrency`` K > 1 the stream fans out instead (LangGraph's ``Send``): ``prepare`` sends every task to
``solve_task`` (the same start_task → drafting → refining, as a graph of its own), at most K run at once (a
semaphore per run), their candidates judged by a pool of K verifier actors, and ``collect`` writes the results
in the stream's order. The memory is still one: a task sees what tasks finished before it *and* what the
tasks in flight beside it have stored so far, so which items a task retrieves depends on timing; a run with
K > 1 is not reproducible from its seed alone (docs/scale-out.md).

``graph`` (compiled without a checkpointer) is what langgraph.json exposes to ``langgraph dev`` /
Studio; Python callers use :func:`build_graph` with their own checkpointer.
"""
from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from evokernel.graph import drafting, refining, resources
from evokernel.graph.context import Context
from evokernel.graph.drafting import FRESH_TASK
from evokernel.graph.state import RunInput, RunState, TaskState
from evokernel.tasks.load import fit_tasks, load_tasks


def prepare(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    """Expand the input (task files, directories, suite names) into the task queue; each task's sizes are fitted
    to the backend as the context's ``fit`` says (``auto``, the default) and the fitted constants join the spec's
    overrides. A task too large for the machine is refused here, by name and size (``TaskError``)."""
    if state.get("fit") is not None:
        raise ValueError("'fit' is a run setting, not an input: give it in the context (Context(fit=...))")
    ctx = Context.coerce(runtime.context)
    tasks = [t for target in state.get("tasks") or [] for t in load_tasks(target, state.get("overrides") or None)]
    if state.get("limit"):
        tasks = tasks[: state["limit"]]
    specs = [resources.spec_of(t) for t in fit_tasks(tasks, ctx.fit, ctx.backend)]
    if not specs:
        raise ValueError("no tasks: give task files, directories or suite names in 'tasks'")
    return {"queue": specs, "results": list(state.get("results") or [])}


def start_task(state: dict[str, Any]) -> dict[str, Any]:
    spec = state["queue"][0]
    return dict(FRESH_TASK, task=spec, task_id=resources.task_id(resources.task(spec)))


def finish_task(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = Context.coerce(runtime.context)
    run = resources.run_dir(ctx)
    result = run.task_summary(state["task_id"])
    results = list(state.get("results") or []) + [result]
    run.write_summary([r["task"] for r in results])
    return {"results": results, "queue": state["queue"][1:]}


def _next_task(state: dict[str, Any]) -> str:
    return "start_task" if state.get("queue") and not state.get("stop") else END


def _fan_out(state: dict[str, Any], runtime: Runtime[Context]) -> Any:
    """After ``prepare``: the sequential stream, or (concurrency > 1) every task sent to ``solve_task``."""
    if Context.coerce(runtime.context).concurrency <= 1 or not state.get("queue") or state.get("stop"):
        return _next_task(state)
    return [Send("solve_task", {"task": spec}) for spec in state["queue"]]


def _start_one(state: dict[str, Any]) -> dict[str, Any]:
    return start_task({"queue": [state["task"]]})


def task_builder() -> StateGraph:
    """One task on its own: start_task → drafting → refining (what ``solve_task`` runs per task)."""
    g = StateGraph(TaskState, context_schema=Context)
    g.add_node("start_task", _start_one)
    g.add_node("drafting", drafting.builder().compile(name="drafting"))
    g.add_node("refining", refining.builder().compile(name="refining"))
    g.add_edge(START, "start_task")
    g.add_edge("start_task", "drafting")
    g.add_edge("drafting", "refining")
    g.add_edge("refining", END)
    return g


_task_graph = task_builder().compile(name="task")


def solve_task(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    """One task of a fanned-out stream (its own checkpoints under this node's namespace, so --resume continues
    it where it stopped); its summary goes to ``done``."""
    ctx = Context.coerce(runtime.context)
    with resources.task_slots(ctx):
        out = _task_graph.invoke({"task": state["task"]}, context=ctx)
    result = resources.run_dir(ctx).task_summary(out["task_id"])
    return {"done": [dict(result, stop=out.get("stop"))]}


def collect(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    """The fanned-out tasks' results in the stream's order."""
    ctx = Context.coerce(runtime.context)
    by_task = {r["task"]: r for r in state.get("done") or []}
    order = [resources.task_id(resources.task(spec)) for spec in state.get("queue") or []]
    results = list(state.get("results") or []) + [
        {k: v for k, v in by_task[t].items() if k != "stop"} for t in order if t in by_task]
    resources.run_dir(ctx).write_summary([r["task"] for r in results])
    stop = next((r["stop"] for r in state.get("done") or [] if r.get("stop")), None)
    return {"results": results, "queue": [], "stop": stop}


def builder() -> StateGraph:
    g = StateGraph(RunState, input_schema=RunInput, context_schema=Context)
    g.add_node("prepare", prepare)
    g.add_node("solve_task", solve_task)
    g.add_node("collect", collect)
    g.add_edge("solve_task", "collect")
    g.add_edge("collect", END)
    g.add_node("start_task", start_task)
    g.add_node("drafting", drafting.builder().compile(name="drafting"))
    g.add_node("refining", refining.builder().compile(name="refining"))
    g.add_node("finish_task", finish_task)
    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", _fan_out, ["start_task", "solve_task", END])
    g.add_edge("start_task", "drafting")
    g.add_edge("drafting", "refining")
    g.add_edge("refining", "finish_task")
    g.add_conditional_edges("finish_task", _next_task, ["start_task", END])
    return g


RECURSION_LIMIT = 100_000


def build_graph(checkpointer: Any = None, **compile_kwargs: Any) -> Any:
    """The main graph for Python callers: ``build_graph(checkpointer=SqliteSaver(...))``."""
    return builder().compile(checkpointer=checkpointer, name="evokernel", **compile_kwargs).with_config(
        recursion_limit=RECURSION_LIMIT)


graph = build_graph()
