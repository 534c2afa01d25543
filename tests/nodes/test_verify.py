from pathlib import Path

from evokernel.nodes.generate import generate
from evokernel.nodes.verify import no_candidate, run_once, submission


def verify(state, runtime):
    """The tool node on a state whose candidate was submitted the way generate submits it."""
    cand = state.get("candidate") or {}
    if not cand.get("source"):
        return {"verdict": no_candidate(cand)}
    return run_once(dict(state, messages=[submission(cand["source"], "call-1")]), runtime.context)

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"


def test_no_candidate_fails_the_generate_gate_without_running_anything(env):
    out = verify(env.state(RELU, candidate={"error": "no code"}), env.runtime())
    assert out["verdict"]["failed_gate"] == "generate" and out["verdict"]["feedback"] == "no code"
    assert env.verifier.calls == []


def test_candidate_goes_to_the_verifier_and_the_verdict_becomes_json(env):
    out = verify(env.state(RELU, candidate={"source": "SRC", "code_hash": "h"}), env.runtime())
    assert env.verifier.calls == ["SRC"]
    v = out["verdict"]
    assert v["feasible"] and v["latency_ms"] == 1.0 and v["reference_ms"] == 2.0 and "details" not in v
    import json
    json.dumps(v)  # checkpointable


class _Exploding:
    backend = "cpu"

    def __init__(self, exc):
        self.exc = exc

    def verify(self, task, source):
        raise self.exc


def test_a_verifier_failure_is_recorded_as_a_verdict_and_the_run_goes_on(env):
    from evokernel.graph import resources

    resources.install(verifier=resources.VerifierService("cpu", verifier=_Exploding(RecursionError("deep"))))
    out = verify(env.state(RELU, candidate={"source": "SRC", "code_hash": "h"}), env.runtime())
    v = out["verdict"]
    assert v["feasible"] is False and v["failed_gate"] == "verifier" and "RecursionError: deep" in v["feedback"]


def test_a_broken_task_or_a_missing_sandbox_is_not_a_verdict(env):
    import pytest

    from evokernel.graph import resources
    from evokernel.tasks.task import TaskError
    from evokernel.verifier.trusted.launcher import SandboxError

    for exc in (TaskError("task broken"), SandboxError("no bwrap")):
        resources.install(verifier=resources.VerifierService("cpu", verifier=_Exploding(exc)))
        with pytest.raises(type(exc)):
            verify(env.state(RELU, candidate={"source": "SRC", "code_hash": "h"}), env.runtime())


def test_verify_node_applies_the_judge_only_when_asked(env):
    from evokernel.graph import resources

    st = env.state(RELU, candidate={"source": "SRC", "code_hash": "h"})
    assert verify(st, env.runtime())["verdict"]["feasible"]  # off by default: no judge is built
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from evokernel.generators.llm import LLMGenerator
    from evokernel.verifier.trusted.llm_judge import LLMJudge

    reply = "VERDICT: CHEATING\nKIND: approximation\nREASON: samples rows"
    resources.install(judge=LLMJudge(LLMGenerator(FakeListChatModel(responses=[reply]), name="fake:judge")))
    try:
        v = verify(st, env.runtime(llm_judge="fake:judge"))["verdict"]
        assert not v["feasible"] and v["failed_gate"] == "hack" and "samples rows" in v["feedback"]
        assert v["details"]["llm_judge"]["kind"] == "approximation"  # kept for the run log and Studio
    finally:
        resources.install(judge=None)


def test_code_hash_takes_any_text():
    # a lone surrogate (rt7_lone_surrogate_kills_tool_node) hashes like any other text, and differently
    from evokernel.nodes.verdict_cache import code_hash

    assert len(code_hash("x = 1  # \ud800")) == 16 and code_hash("\ud800") != code_hash("\ud801")
