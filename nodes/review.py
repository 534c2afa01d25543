"""review: a human looks at a verdict too good to be true before it counts (optional; Studio shows it).

With ``review`` on in the run's context, a feasible verdict that a physical bound says is implausible
pauses the graph with LangGraph's ``interrupt()``: the question, why it is suspicious and the verdict's
numbers show in Studio (or in the stream's ``__interrupt__``). Resuming with ``Command(resume=...)``:
``True`` / ``{"accept": True}`` keeps the verdict; ``False`` / ``{"accept": False, "reason": "..."}``
turns it into a ``hack`` verdict with the reviewer's reason as feedback (no reward as a feasible kernel,
the trace keeps the outcome). The verify node is not re-run on resume: review is its own node.

Suspicious (each rule names its bound):
* a CPU kernel faster than moving its inputs and outputs once at this machine's bandwidth, by more than
  2x (the roofline estimate's memory efficiency, verifier/trusted/roofline.py);
* a speedup over eager PyTorch of 20x or more (eager runs library kernels: an honest 20x is rare, a
  cached or skipped computation is not).
"""
from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from evokernel.graph.context import Context

MEMORY_EFFICIENCY = 2.0
SPEEDUP = 20.0


def suspicious(verdict: dict[str, Any]) -> str:
    """Why this verdict is too good to be true, or ''."""
    if not verdict.get("feasible"):
        return ""
    diag = (verdict.get("details") or {}).get("diagnosis") or {}
    if diag.get("kind") == "roofline estimate" and diag.get("bound") == "memory" \
            and float(diag.get("efficiency") or 0) > MEMORY_EFFICIENCY:
        return (f"the kernel is {float(diag['efficiency']):.1f}x faster than moving its inputs and outputs once "
                f"at this machine's bandwidth ({float(diag.get('bytes') or 0) / 2**20:.1f} MiB in "
                f"{float(diag.get('roof_ms') or 0):.4f} ms at the memory roof)")
    speedup = verdict.get("speedup")
    if speedup is not None and float(speedup) >= SPEEDUP:
        return f"a {float(speedup):.1f}x speedup over eager PyTorch"
    return ""


def review(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = Context.coerce(runtime.context)
    verdict = state.get("verdict") or {}
    why = suspicious(verdict) if ctx.review and not state.get("stop") else ""
    if not why:
        return {}
    answer = interrupt({
        "question": "Accept this verdict? Resume with True to keep it, or {'accept': False, 'reason': '...'} "
                    "to refuse it as a hack.",
        "why": why, "task": state.get("task_id"), "iteration": state.get("iteration"),
        "latency_ms": verdict.get("latency_ms"), "reference_ms": verdict.get("reference_ms"),
        "speedup": verdict.get("speedup"), "profile": (verdict.get("details") or {}).get("profile", ""),
        "source": (state.get("candidate") or {}).get("source", ""),
    })
    accept = answer.get("accept", False) if isinstance(answer, dict) else bool(answer)
    if accept:
        return {}
    reason = (answer.get("reason") if isinstance(answer, dict) else "") or "no reason given"
    refused = dict(verdict, feasible=False, failed_gate="hack", latency_ms=None, speedup=None,
                   feedback=f"refused by a reviewer: {reason} (flagged because {why})")
    refused["gates"] = dict(verdict.get("gates") or {}, hack=False)
    return {"verdict": refused}
