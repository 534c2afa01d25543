"""Stage 1, cold-start drafting (paper §3.5): retrieve → q_filter → generate → verify → review → update,
looping until a feasible kernel exists, the budget T is spent, or the run must stop. ``verify`` is a
LangGraph ``ToolNode`` over the verifier's LangChain tools (:mod:`evokernel.nodes.verify`): ``generate``
submits the candidate as a ``verify_kernel`` tool call.

Also served on its own (langgraph.json "drafting") for stepping through one task in Studio:
input ``{"task": {"path": "evokernel/suites/cpu_l1/01_relu.py"}}``, breakpoints before any node.
"""
from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from evokernel.graph.context import Context
from evokernel.graph.retry import STORE_RETRY
from evokernel.graph.state import TaskState
from evokernel.nodes.generate import generate
from evokernel.nodes.q_filter import q_filter
from evokernel.nodes.retrieve import retrieve
from evokernel.nodes.review import review
from evokernel.nodes.update import update
from evokernel.nodes.verify import verify


FRESH_TASK = {"iteration": 0, "attempts": 0, "feasible": False, "first_feasible_iteration": None,
              "first_latency_ms": None, "best_latency_ms": None, "best_id": None, "eager_ms": None,
              "start_points": [], "start_point": None, "pool": [], "context": [], "knowledge": [],
              "candidate": {}, "messages": [], "verdict": {}, "last_feedback": None}


def setup(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    """Fill the per-task keys a standalone run (e.g. in Studio: input {"task": {"path": ...}}) lacks, its task
    fitted to the machine as the run's ``fit`` says; inside the main graph they are already set and nothing
    changes."""
    if not state.get("task") or not state["task"].get("path"):
        raise ValueError('drafting needs a task: {"task": {"path": "<task file>", "overrides": {...}}}')
    if state.get("task_id"):
        return {}
    from evokernel.graph import resources

    spec = resources.fitted_spec(state["task"], Context.coerce(runtime.context))
    fresh = {k: v for k, v in FRESH_TASK.items() if k not in state}
    return dict(fresh, task=spec, task_id=resources.task_id(resources.task(spec)))


def budget_left(state: dict[str, Any], runtime: Runtime[Context]) -> bool:
    return state.get("iteration", 0) < Context.coerce(runtime.context).budget and not state.get("stop")


def _start(state: dict[str, Any], runtime: Runtime[Context]) -> str:
    from evokernel.graph.methods import independent_samples

    ctx = Context.coerce(runtime.context)
    drafting = not state.get("feasible") or independent_samples(ctx.method)  # Pass@k drafts all T
    return "retrieve" if budget_left(state, runtime) and drafting else END


def _after_generate(state: dict[str, Any]) -> str:
    """A submitted candidate goes to the verifier's tool node; an attempt without one (its verdict written by
    generate) straight to update."""
    if state.get("stop"):
        return END
    last = (state.get("messages") or [None])[-1]
    return "verify" if getattr(last, "tool_calls", None) else "update"


def add_attempt(g: StateGraph, route: Any, first: str) -> None:
    """The attempt both stages share: retrieve → q_filter → generate → verify → review → update, then
    ``route`` decides between another attempt (back to ``first``) and END."""
    for name, node in (("retrieve", retrieve), ("q_filter", q_filter), ("generate", generate), ("verify", verify),
                       ("review", review), ("update", update)):
        # the memory's nodes run again after a connection reset or a peer restarting (graph/retry.py)
        g.add_node(name, node, retry_policy=STORE_RETRY if name in ("retrieve", "q_filter", "update") else None)
    g.add_edge("retrieve", "q_filter")
    g.add_edge("q_filter", "generate")
    g.add_conditional_edges("generate", _after_generate, ["verify", "update", END])
    g.add_edge("verify", "review")  # review: an interrupt() for a human, only with context review on
    g.add_edge("review", "update")
    g.add_conditional_edges("update", route, [first, END])


def builder() -> StateGraph:
    g = StateGraph(TaskState, context_schema=Context)
    g.add_node("setup", setup)
    g.add_edge(START, "setup")
    g.add_conditional_edges("setup", _start, ["retrieve", END])
    add_attempt(g, _start, "retrieve")
    return g


# for langgraph.json / Studio: compiled without a checkpointer (the server brings its own)
graph = builder().compile(name="drafting").with_config(recursion_limit=10_000)
