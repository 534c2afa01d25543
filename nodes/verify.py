"""verify: the tool node. The verifier (the backend's compiler, sandboxed runs and profiler) judges the
candidate: anti-hack, compile, correctness, latency, profile. Its verdict is the environment's outcome o_t;
nothing the candidate says about itself is trusted.

The verifier is exposed as LangChain tools and run by LangGraph's ``ToolNode``:

* ``verify_kernel(source)`` -- one environment step: the whole verdict (the rules, the native build,
  correctness on secret inputs, latency against eager PyTorch, and the profile of what bounds the kernel).
  It answers with a ``ToolMessage`` (the feedback a model reads) and writes the verdict into the state;
* ``check_kernel_rules(source)`` -- the static anti-hack rules alone: milliseconds, nothing is built or run.

In the EvoKernel graphs ``generate`` submits each candidate as a ``verify_kernel`` call (an ``AIMessage``
with one tool call in ``messages``) and this node executes it. The same tools can be bound to any chat
model (``model.bind_tools(VERIFIER_TOOLS)``) in a graph whose state has ``task`` (a TaskSpec) and
``messages``: the task and the run's verifier come from the graph (``ToolRuntime``: its state and runtime
context), never from the model's arguments.
"""
from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.types import Command

from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.tasks.task import TaskError
from evokernel.verifier.trusted.launcher import SandboxError

VERIFY_TOOL = "verify_kernel"
RULES_TOOL = "check_kernel_rules"
_NO_GATES = {"hack": None, "compile": None, "correctness": None}


def no_candidate(cand: dict[str, Any]) -> dict[str, Any]:
    """The verdict of an attempt whose generator produced no candidate (gate ``generate``; nothing runs)."""
    return {"feasible": False, "failed_gate": "generate",
            "feedback": cand.get("error") or "the generator returned no candidate", "gates": dict(_NO_GATES),
            "latency_ms": None, "reference_ms": None, "speedup": None}


def submission(source: str, call_id: str) -> AIMessage:
    """A candidate submitted to the verifier: the tool call ``generate`` hands to this node."""
    return AIMessage(content="", tool_calls=[{"name": VERIFY_TOOL, "args": {"source": source}, "id": call_id,
                                              "type": "tool_call"}])


def judge(ctx: Context, task: Any, source: str) -> dict[str, Any]:
    """The verdict of ``source`` for ``task`` as JSON (the state's ``verdict``)."""
    try:
        verdict = resources.verifier(ctx).verify(task, source)
    except (TaskError, SandboxError):
        raise  # a broken task, or a machine that cannot judge (the run stops and can be resumed)
    except Exception as exc:  # noqa: BLE001 - the attempt is recorded whatever went wrong
        # Verifier.verify turns everything a candidate can cause into a verdict; what is left is our
        # own failure to judge it. Record it (infeasible, gate "verifier") so the run goes on.
        return {"feasible": False, "failed_gate": "verifier",
                "feedback": f"the verifier could not judge this candidate: {type(exc).__name__}: {str(exc)[:500]}",
                "gates": dict(_NO_GATES), "latency_ms": None, "reference_ms": None, "speedup": None}
    llm_judge = resources.judge(ctx)
    if llm_judge is not None and verdict.feasible:  # the hack gate's second tier (paper §3.5), opt-in
        from evokernel.verifier.trusted.llm_judge import apply

        verdict = apply(verdict, llm_judge.review(task.source, source))
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
    return data


def feedback_text(verdict: dict[str, Any]) -> str:
    """What a model reads of a verdict: feasible or the failed gate, then the verifier's feedback."""
    head = "FEASIBLE" if verdict.get("feasible") else f"NOT FEASIBLE (failed gate: {verdict.get('failed_gate')})"
    return f"{head}\n{verdict.get('feedback') or ''}".rstrip()


def _task(runtime: ToolRuntime[Context, dict]) -> Any:
    spec = (runtime.state or {}).get("task") if isinstance(runtime.state, dict) else None
    if not isinstance(spec, dict) or not spec.get("path"):
        raise TaskError("the verifier's tools judge the graph's current task: the state has no 'task' "
                        '({"path": "<task file>", "overrides": {...}})')
    return resources.task(spec)


@tool(VERIFY_TOOL)
def verify_kernel(source: str, runtime: ToolRuntime[Context, dict]) -> Command:
    """Judge a complete candidate file (Python defining ModelNew, with its native kernel) for the current
    task on the run's backend: anti-hack rules, compile, correctness on secret inputs, latency against eager
    PyTorch, and a profile of what bounds the kernel. Returns FEASIBLE or the failed gate, with feedback.

    Args:
        source: the whole candidate file.
    """
    from evokernel.generators.base import utf8_text

    ctx = Context.coerce(runtime.context)
    task = _task(runtime)
    source = utf8_text(source)  # a tool call's arguments are a model's text too (generators/base.py)
    verdict = judge(ctx, task, source)
    from evokernel.nodes.verdict_cache import record_verdict, reuse_key

    record_verdict(resources.verifier(ctx), reuse_key(ctx, task.key), source, verdict, runtime.tool_call_id or "",
                   store=resources.run_dir(ctx))
    return Command(update={"verdict": verdict, "messages": [
        ToolMessage(content=feedback_text(verdict), name=VERIFY_TOOL, tool_call_id=runtime.tool_call_id)]})


@tool(RULES_TOOL)
def check_kernel_rules(source: str, runtime: ToolRuntime[Context, dict]) -> str:
    """Check a candidate file against the verifier's static anti-hack rules only (what it may import and
    call, native code rules): fast, nothing is built or run. Returns 'no findings' or the findings.

    Args:
        source: the whole candidate file.
    """
    ctx = Context.coerce(runtime.context)
    try:
        findings = resources.static_rules(ctx)(source)
    except SyntaxError as exc:
        return f"candidate.py:{exc.lineno}: error: {exc.msg}"
    return "no findings" if not findings else "\n".join(str(f) for f in findings[:20])


VERIFIER_TOOLS = [verify_kernel, check_kernel_rules]


def _tool_errors(exc: Exception) -> str:
    """Arguments a model got wrong come back to it as a message; every other error propagates (a broken
    task or a machine that cannot judge stops the run, as before)."""
    from langgraph.prebuilt.tool_node import ToolInvocationError

    if isinstance(exc, ToolInvocationError):
        return exc.message
    raise exc


verify = ToolNode(VERIFIER_TOOLS, name="verify", handle_tool_errors=_tool_errors)


_single: Any = None


def run_once(state: dict[str, Any], context: Context) -> dict[str, Any]:
    """The tool node run once on ``state`` (the last message's tool calls), outside the full graph: the state
    after it (``verdict``, ``messages``). For Python callers and tests stepping through one attempt."""
    global _single
    if _single is None:
        from langgraph.graph import END, START, StateGraph

        from evokernel.graph.state import TaskState

        g = StateGraph(TaskState, context_schema=Context)
        g.add_node("verify", verify)
        g.add_edge(START, "verify")
        g.add_edge("verify", END)
        _single = g.compile(name="verify")
    return _single.invoke(state, context=context)
