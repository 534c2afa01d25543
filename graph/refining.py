"""Stage 2, continual refining (paper §3.6): select_start → retrieve → q_filter → generate → verify → review →
update, until the budget T (shared with drafting) is spent or the run must stop."""
from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from evokernel.graph.context import Context
from evokernel.graph.drafting import add_attempt, budget_left
from evokernel.graph.retry import STORE_RETRY
from evokernel.graph.state import TaskState
from evokernel.nodes.select_start import select_start


def _next(state: dict[str, Any], runtime: Runtime[Context]) -> str:
    ok = state.get("feasible") and state.get("start_points")
    return "select_start" if ok and budget_left(state, runtime) else END


def builder() -> StateGraph:
    g = StateGraph(TaskState, context_schema=Context)
    g.add_node("select_start", select_start, retry_policy=STORE_RETRY)  # reads Q2 from the ledger
    g.add_conditional_edges(START, _next, ["select_start", END])
    g.add_edge("select_start", "retrieve")
    add_attempt(g, _next, "select_start")
    return g


graph = builder().compile(name="refining").with_config(recursion_limit=10_000)
