"""generate: ask the frozen generator G_theta for a candidate (paper: y_t ~ G(x, c_t)).

The request carries the task, the chosen context c_t, the seed API knowledge and, when refining,
the start point p_t with its observable children (earlier refinements of p_t and their outcomes)
and its verifier/profile feedback. A reply without a usable candidate is not an error of the run:
it becomes a failed attempt with the reason as feedback. A reached token/cost cap stops the run
cleanly; an endpoint that keeps failing after retries stops it too (resume continues here).
"""
from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from evokernel.generators.base import BudgetExceeded, ContextItem, GenerationError, GenerationRequest, not_utf8
from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.graph.methods import independent_samples, shows_children
from evokernel.nodes.retrieve import stage_of
from evokernel.nodes.verdict_cache import code_hash
from evokernel.nodes.verify import no_candidate, submission
from evokernel.runtime import stop_request


def _ctx_items(items: list[Any]) -> list[ContextItem]:
    return [ContextItem(id=i.id, kind=i.kind, text=i.text, meta=dict(i.meta)) for i in items]


def build_request(state: dict[str, Any], ctx: Context) -> GenerationRequest:
    store = resources.store(ctx)
    task = resources.task(state["task"])
    stage = stage_of(state, ctx)
    iteration = state.get("iteration", 0)
    start = children = None
    profile = None
    if stage == "refine" and state.get("start_point"):
        got = store.get([state["start_point"]])
        if got:
            start = _ctx_items(got)[0]
            profile = start.meta.get("feedback") or None
            if shows_children(ctx.method):
                children = _ctx_items(sorted(store.find(parent=start.id), key=lambda i: i.meta.get("iteration", 0)))
    return GenerationRequest(
        task=task, stage=stage, backend=ctx.backend, iteration=iteration,
        seed=resources.attempt_seed(ctx.seed, state.get("task_id", ""), iteration, "generate"),
        context=_ctx_items(store.get(state.get("context") or [])),
        knowledge=_ctx_items(store.get(state.get("knowledge") or [])),
        start_point=start, children=children or [],
        last_feedback=None if independent_samples(ctx.method) else state.get("last_feedback"),
        best_latency_ms=state.get("best_latency_ms"), profile=profile,
    )


def generate(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    """The candidate, submitted to the verifier's tool node as a ``verify_kernel`` call (``messages``); an attempt
    without a candidate gets its ``generate``-gate verdict here (nothing to run)."""
    out = _generate(state, runtime)
    cand = out.get("candidate")
    if cand is None:
        return out
    if cand.get("source"):
        ctx = Context.coerce(runtime.context)
        # a recalled kernel is judged again on purpose (nodes/recall.py); with review on, every verdict is reviewed
        if not cand.get("recalled_from") and not ctx.review:
            from evokernel.nodes.verdict_cache import earlier_verdict, reuse_key

            task = resources.task(state["task"])
            reused = earlier_verdict(resources.verifier(ctx), reuse_key(ctx, task.key), cand.get("code_hash") or "",
                                    store=resources.run_dir(ctx))
            if reused is not None:  # identical code: the old verdict, the attempt still counted (update)
                return dict(out, messages=[], verdict=reused)
        call_id = f"{state.get('task_id', 'task')}#{state.get('iteration', 0)}"
        return dict(out, messages=[submission(cand["source"], call_id)])
    return dict(out, messages=[], verdict=no_candidate(cand))


def _generate(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = Context.coerce(runtime.context)
    ledger = resources.tokens(ctx)
    try:
        ledger.check()
    except BudgetExceeded as exc:
        return {"stop": str(exc)}
    stop_request.check("the next generation")  # Ctrl-C: stop between attempts, not after the stage
    from evokernel.nodes.recall import recall_for

    earlier = recall_for(state, ctx)
    if earlier is not None:  # P(x) from an earlier run: its fastest kernel, judged again (nodes/recall.py)
        meta = earlier.meta or {}
        return {"candidate": {
            "source": earlier.text, "code_hash": code_hash(earlier.text),
            "summary": f"recalled the fastest earlier kernel of this task ({earlier.id}, {float(meta.get('latency_ms') or 0):.4g} ms "
                       f"in run {meta.get('run', '?')})",
            "schedule": None, "model": "recall", "reply": "", "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
            "recalled_from": earlier.id}}
    gen = resources.generator(ctx)
    request = build_request(state, ctx)
    try:
        out = gen.generate(request)
    except GenerationError as exc:
        stop_request.check("recording a generation cut by the stop")  # not the model's failure
        return {"candidate": {"error": str(exc), "reply": exc.reply, "model": getattr(gen, "name", ""),
                              "tokens_in": exc.tokens_in, "tokens_out": exc.tokens_out, "cost_usd": exc.cost_usd,
                              "code_hash": ""}}
    except BudgetExceeded as exc:
        return {"stop": str(exc)}
    if problem := not_utf8(out.source):  # nothing downstream (the verifier, the run dir, the memory) can hold it
        return {"candidate": {"error": f"generate: {problem}", "reply": out.reply, "model": out.model or
                              getattr(gen, "name", ""), "tokens_in": out.tokens_in, "tokens_out": out.tokens_out,
                              "cost_usd": out.cost_usd, "code_hash": ""}}
    return {"candidate": {
        "source": out.source, "code_hash": code_hash(out.source),
        "summary": out.summary, "schedule": out.schedule, "model": out.model or getattr(gen, "name", ""),
        "reply": out.reply, "tokens_in": out.tokens_in, "tokens_out": out.tokens_out, "cost_usd": out.cost_usd,
        **({"usage_details": out.usage_details} if getattr(out, "usage_details", None) else {}),
    }}
