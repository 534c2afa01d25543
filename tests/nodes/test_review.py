"""review: a verdict too good to be true pauses the graph for a human (interrupt), who keeps or refuses it."""
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from evokernel.graph import drafting, resources
from evokernel.nodes.review import suspicious
from evokernel.verifier.verdict import Verdict

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"


def too_fast(efficiency=3.0, speedup=2.0):
    return Verdict(feasible=True, failed_gate=None, feedback="feasible", task="01_relu", latency_ms=0.1,
                   reference_ms=0.2, speedup=speedup, gates={"hack": True, "compile": True, "correctness": True},
                   details={"diagnosis": {"kind": "roofline estimate", "bound": "memory", "efficiency": efficiency,
                                          "bytes": 2**21, "roof_ms": 0.3}, "profile": "memory roof ..."})


class Once:
    name = "once"

    def generate(self, request):
        from evokernel.generators.base import Generation

        return Generation(source="# a kernel", summary="fast", model="once")


def test_the_rules_name_their_bound():
    assert "faster than moving its inputs and outputs" in suspicious(too_fast().to_json())
    assert suspicious(too_fast(efficiency=1.2).to_json()) == ""
    assert "25.0x speedup" in suspicious(too_fast(efficiency=0.5, speedup=25.0).to_json())
    assert suspicious({"feasible": False, "speedup": 100}) == ""


def run(env, answer, review=True):
    env.verifier.next, env.verifier.calls = [too_fast()], []
    resources.install(generator=Once())
    app = drafting.builder().compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": f"review-{answer}-{review}"}}
    ctx = env.runtime(budget=1, review=review, recall=False).context
    out = app.invoke({"task": {"path": str(RELU), "overrides": {}, "suite": "cpu-l1"}}, cfg, context=ctx)
    if not review:
        return out, None
    pause = out["__interrupt__"][0].value
    assert env.verifier.calls == ["# a kernel"]
    out = app.invoke(Command(resume=answer), cfg, context=ctx)
    assert env.verifier.calls == ["# a kernel"]  # resuming re-runs the review, never the verifier
    return out, pause


def test_a_reviewer_refuses_it_as_a_hack_or_keeps_it(env):
    out, pause = run(env, {"accept": False, "reason": "it reads a cached output"})
    assert "faster than moving" in pause["why"] and pause["source"] == "# a kernel" and pause["speedup"] == 2.0
    assert out["verdict"]["failed_gate"] == "hack" and not out["feasible"]
    assert "refused by a reviewer: it reads a cached output" in out["verdict"]["feedback"]
    kept, _ = run(env, True)
    assert kept["feasible"] and kept["verdict"]["feasible"]
    off, _ = run(env, None, review=False)  # review off (the default): no pause
    assert off["feasible"] and "__interrupt__" not in off
