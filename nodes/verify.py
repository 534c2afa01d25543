"""verify: the tool node. Step 1's verifier (the backend's compiler and profiler, behind the sandbox)
judges the candidate: anti-hack, compile, correctness, latency. Its verdict is the environment's
outcome o_t; nothing the candidate says about itself is trusted.
"""
from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.tasks import TaskError
from evokernel.verifier.trusted.launcher import SandboxError


def verify(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = Context.coerce(runtime.context)
    cand = state.get("candidate") or {}
    if state.get("stop"):
        return {}
    if cand.get("error") or not cand.get("source"):
        return {"verdict": {"feasible": False, "failed_gate": "generate",
                            "feedback": cand.get("error") or "the generator returned no candidate",
                            "gates": {"hack": None, "compile": None, "correctness": None},
                            "latency_ms": None, "reference_ms": None, "speedup": None}}
    task = resources.task(state["task"])
    try:
        verdict = resources.verifier(ctx).verify(task, cand["source"])
    except (TaskError, SandboxError):
        raise  # a broken task, or a machine that cannot judge (the run stops and can be resumed)
    except Exception as exc:  # noqa: BLE001 - the attempt is recorded whatever went wrong
        # Verifier.verify turns everything a candidate can cause into a verdict; what is left is our
        # own failure to judge it. Record it (infeasible, gate "verifier") so the run goes on.
        return {"verdict": {"feasible": False, "failed_gate": "verifier",
                            "feedback": f"the verifier could not judge this candidate: {type(exc).__name__}: "
                                        f"{str(exc)[:500]}",
                            "gates": {"hack": None, "compile": None, "correctness": None},
                            "latency_ms": None, "reference_ms": None, "speedup": None}}
    judge = resources.judge(ctx)
    if judge is not None and verdict.feasible:  # the hack gate's second tier (paper §3.5), opt-in
        from evokernel.verifier.trusted.llm_judge import apply

        verdict = apply(verdict, judge.review(task.source, cand["source"]))
    data = verdict.to_json()
    # details are large and mostly for debugging; the update node needs the profile (the refining stage
    # reads it) and the bottleneck the profiler or latency model named (stored with the trace)
    details = data.pop("details", None) or {}
    kept = {k: details[k] for k in ("profile", "diagnosis", "llm_judge") if k in details}
    if isinstance(details.get("estimate"), dict):
        kept["estimate"] = {"kernels": [{"bound": k.get("bound")} for k in details["estimate"].get("kernels") or []
                                        if isinstance(k, dict)]}
    if kept:
        data["details"] = kept
    return {"verdict": data}
