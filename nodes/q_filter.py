"""q_filter: the stage's Q-value picks N items of the pool, ε-greedily (paper §3.4, Eq. 6).

Seed API knowledge does not compete here: it has no learned value. It comes by its own path, ranked by
how specifically each item matches the task (the ops of its traced graph, its name, its category, APIs
seen in the chosen items' code: memory/knowledge.py).
"""
from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime

from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.graph.methods import shares_memory
from evokernel.memory.retrieval import Candidate, select
from evokernel.nodes.retrieve import stage_of

_IDENT = re.compile(r"#\s*pragma\s+omp\s+\w+|[A-Za-z_]\w*(?:::\w+)*")
KNOWLEDGE_LIMIT = 3


def api_names(texts: list[str]) -> set[str]:
    """Identifiers and OpenMP pragmas in code, for the exact-name lookup of API knowledge."""
    names: set[str] = set()
    for text in texts:
        for m in _IDENT.findall(text):
            names.add(re.sub(r"\s+", " ", m.strip()))
    return names


def q_filter(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = Context.coerce(runtime.context)
    store = resources.store(ctx)
    task = resources.task(state["task"])
    stage = stage_of(state, ctx)
    iteration = state.get("iteration", 0)
    store.values.refresh()  # other processes sharing the ledger may have moved values
    pool = [Candidate(p["id"], p["similarity"], store.values.q(p["id"], stage)) for p in state.get("pool") or []]
    rng = resources.attempt_rng(ctx.seed, state.get("task_id", ""), iteration, "q_filter")
    chosen = select(pool, ctx.n_context, ctx.policy, epsilon=ctx.epsilon(iteration), rng=rng)
    context = [c.item_id for c in chosen]
    items = store.get(context)
    if shares_memory(ctx.method) and ctx.seed_knowledge == "all":
        from evokernel.memory.knowledge import task_ops

        knowledge = store.knowledge(ctx.backend, apis=api_names([i.text for i in items if i.kind == "trace"]),
                                    category=task.category, limit=KNOWLEDGE_LIMIT, ops=task_ops(task), name=task.name)
    else:  # the baselines' one demonstration (and a run with no memory): the backend's candidate-format item
        knowledge = store.knowledge(ctx.backend, limit=1)
    return {"context": context, "knowledge": [k.id for k in knowledge]}
