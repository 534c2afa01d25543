"""retrieve: Chroma proposes the pool C(x) of K = λ·N items most similar to the task (paper §3.4).

Drafting draws from experiences and feasible traces (a failed trace's code is not an example to
follow), with the query extended by the previous attempt's failure when there was one; refining from
traces, best practices and experiences, with the query extended by the start point's summary and
profile so that bottleneck-matched examples come up. The start point, its own children and their
experiences are excluded here: refining shows them through their own path (select_start / generate),
not as value-selected context.
"""
from __future__ import annotations

import ast
from typing import Any

from langgraph.runtime import Runtime

from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.memory.retrieval import pool_size
from evokernel.tasks.task import Task

DRAFT_KINDS = ("experience", "trace")
REFINE_KINDS = ("trace", "best_practice", "experience")


def forward_ops(task: Task) -> list[str]:
    """Names of the calls in the reference's forward (e.g. torch.matmul, relu), read without running it."""
    try:
        tree = ast.parse(task.source)
    except SyntaxError:
        return []
    ops: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name in ("forward", "__init__"):
                    for call in ast.walk(fn):
                        if isinstance(call, ast.Call):
                            name = ast.unparse(call.func).split(".")[-1]
                            if name not in ops and name not in ("super", "__init__"):
                                ops.append(name)
    return ops


_keys: dict[str, str] = {}


def task_key(task: Task) -> str:
    """The text a task is embedded by: name, category, description and the reference's operators
    (parsed once per task source: retrieve and update ask for it at every attempt)."""
    if task.key not in _keys:
        _keys[task.key] = _task_key(task)
    return _keys[task.key]


def _task_key(task: Task) -> str:
    words = task.name.split("_", 1)[-1].replace("_", " ") if task.name[:1].isdigit() else task.name.replace("_", " ")
    return f"{words} | {task.category} | {task.description} | ops: {', '.join(forward_ops(task))}"


def stage_of(state: dict[str, Any], ctx: Context | None = None) -> str:
    """draft until a feasible kernel exists, then refine (Pass@k: always draft)."""
    from evokernel.graph.methods import independent_samples

    if ctx is not None and independent_samples(ctx.method):
        return "draft"
    return "refine" if state.get("feasible") else "draft"


def retrieve(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = Context.coerce(runtime.context)
    from evokernel.graph.methods import shares_memory

    if ctx.policy == "none" or ctx.n_context == 0 or not shares_memory(ctx.method):
        return {"pool": []}
    from evokernel.nodes.recall import recall_for

    if recall_for(state, ctx) is not None:  # the attempt re-submits an earlier kernel: no context to credit
        return {"pool": []}
    task = resources.task(state["task"])
    store = resources.store(ctx)
    stage = stage_of(state, ctx)
    iteration = state.get("iteration", 0)
    k = pool_size(ctx.n_context, ctx.lam(iteration))
    key = task_key(task)
    exclude: set[str] = set()
    bound = ""
    if stage == "refine" and state.get("start_point"):
        sp = state["start_point"]
        got = store.get([sp])
        own = got + store.find(parent=sp)
        # the start point, its children and their experiences: the prompt shows them on their own path
        # (start point, variants with outcomes); as retrieved context they would repeat them, and take
        # the place of what other kernels teach
        exclude.update(it.id for it in own)
        exclude.update(str(it.meta.get("experience")) for it in own if it.meta.get("experience"))
        if got:
            key += f" | {got[0].meta.get('summary', '')} | {got[0].meta.get('profile', '')}"
            bound = str(got[0].meta.get("bound") or "")
    elif stage != "refine" and state.get("last_feedback"):
        # drafting after a failure: what went wrong joins the query, so experiences of the same failure
        # (e.g. a build error naming the same missing header) come up, not only those of similar operators
        key += " | " + failure_key(state["last_feedback"])
    # a wider look: refining, so that bottleneck-matched traces can come forward; drafting, because failed
    # traces are left out below
    extra = k if bound or stage != "refine" else 0
    hits = store.query_ids(key, k + extra + len(exclude), kinds=REFINE_KINDS if stage == "refine" else DRAFT_KINDS,
                           backend=ctx.backend)
    pool = [{"id": item_id, "similarity": float(sim)} for item_id, sim in hits if item_id not in exclude]
    if stage != "refine":
        pool = feasible_traces_only(store, pool)
        pool = relevant_only(pool, ctx.relevance_margin)
    if bound:
        pool = bottleneck_first(store, pool, bound)
    return {"pool": pool[:k]}


def failure_key(feedback: str, chars: int = 300) -> str:
    """The head of a verifier feedback as query text: its first lines, whitespace folded."""
    lines = [ln.strip() for ln in str(feedback).splitlines() if ln.strip()]
    return " ".join(" ".join(lines[:4]).split())[:chars]


def feasible_traces_only(store: Any, pool: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drafting shows code only of kernels that passed: a failed trace of another operator is an example
    a weak model copies (measured: three broken gelu traces in sigmoid's prompt, copied word for word).
    What went wrong reaches drafting through the experiences."""
    failed = {it.id for it in store.get([p["id"] for p in pool])
              if it.kind == "trace" and (it.meta or {}).get("feasible") is False}
    return [p for p in pool if p["id"] not in failed]


def relevant_only(pool: list[dict[str, Any]], margin: float) -> list[dict[str, Any]]:
    """Items within ``margin`` of the best hit's similarity (0: all). Measured on the template-built
    memory with MiniLM keys: a related operator scores 0.68-0.83 against matmul, softmax and max_pool2d
    queries, but unrelated ones reach 0.5 (elementwise add for softmax) and related ones can be as low as
    0.38 (relu for gelu); no absolute threshold separates them, a margin below the best hit does."""
    if margin <= 0 or not pool:
        return pool
    best = max(p["similarity"] for p in pool)
    return [p for p in pool if p["similarity"] >= best - margin]


def bottleneck_first(store: Any, pool: list[dict[str, Any]], bound: str) -> list[dict[str, Any]]:
    """Traces whose profile names the start point's bottleneck first (the paper's bottleneck-matched
    retrieval), then the rest; each part keeps its similarity order. Each entry says if it matched."""
    metas = {it.id: it.meta for it in store.get([p["id"] for p in pool])}
    matched = [dict(p, bottleneck=bound) for p in pool if (metas.get(p["id"]) or {}).get("bound") == bound]
    rest = [p for p in pool if (metas.get(p["id"]) or {}).get("bound") != bound]
    return matched + rest
