"""recall: earlier runs' kernels of the same task join P(x), judged again by this run's verifier.

The paper's P(x) is the set of feasible kernels of x, and the memory outlives a run. A task run again on
the same memory (same task file and sizes: the task's source hash, same backend) starts from the fastest
kernel an earlier run found, instead of drafting from nothing: the task's first attempt re-submits that
kernel (no generator call) and the verifier judges it like any candidate, so a kernel this verifier now
refuses (a stricter rule, another machine) is refused again and drafting goes on, and a feasible one
enters P(x) with this run's own latency; refining starts from it at the next attempt.

A recall attempt uses no retrieved context, so no item's value is updated for it (retrieve leaves the pool
empty; update credits nothing). It is the task's first attempt of the run and only that one; ``recall``
off (``--no-recall``; eval units always, so each arm measures from scratch) and the methods without
shared memory never recall. Traces written before task keys were recorded (``task_key`` in their
metadata) are not matched: same name with other sizes is another task.
"""
from __future__ import annotations

from typing import Any

from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.graph.methods import shares_memory


def earlier_best(store: Any, task: Any, backend: str, run_id: str) -> Any | None:
    """The fastest feasible kernel of ``task`` (same source hash) on ``backend`` from another run, with its
    code kept; None when there is none (one Chroma metadata query)."""
    best, best_ms = None, float("inf")
    # by the source hash, not the task's name: a task named by path and by suite/name is one task, and the
    # same name with other sizes is another
    for item in store.find_where("trace", backend=backend, task_key=task.key, feasible=True):
        meta = item.meta or {}
        if not item.text.strip():
            continue
        if meta.get("code_kept") is False or meta.get("run") == run_id:
            continue
        ms = float(meta.get("latency_ms") or -1)
        if 0 < ms < best_ms:
            best, best_ms = item, ms
    return best


def recall_for(state: dict[str, Any], ctx: Context) -> Any | None:
    """The trace this attempt re-submits, or None for a normal attempt."""
    if not ctx.recall or not shares_memory(ctx.method) or ctx.policy == "none":
        return None
    if state.get("iteration", 0) != 0 or state.get("feasible"):
        return None
    task = resources.task(state["task"])
    return earlier_best(resources.store(ctx), task, ctx.backend, resources.run_dir(ctx).run_id)
