from pathlib import Path

from evokernel.generators.base import BudgetExceeded, Generation, GenerationError
from evokernel.graph import resources
from evokernel.nodes.generate import generate

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"


class Recorder:
    name = "rec"

    def __init__(self, result):
        self.result, self.requests = result, []

    def generate(self, request):
        self.requests.append(request)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_request_carries_context_knowledge_start_point_children_and_feedback(env):
    env.store.ensure_seed("cpu")
    env.store.add([env.trace("c1"), env.trace("sp", latency_ms=3.0, feedback="", profile="latency 3 ms"),
                   env.trace("kid", parent="sp", stage="refine", feasible=False, iteration=4)])
    seed_id = env.store.find(kind="seed")[0].id
    gen = Recorder(Generation(source="print(1)", summary="s", schedule={"family": "x"}, tokens_in=5, tokens_out=7))
    resources.install(generator=gen)
    st = env.state(RELU, feasible=True, iteration=5, context=["c1"], knowledge=[seed_id], start_point="sp",
                   best_latency_ms=2.5, last_feedback="boom")
    out = generate(st, env.runtime())
    (req,) = gen.requests
    assert req.stage == "refine" and req.iteration == 5
    assert [c.id for c in req.context] == ["c1"] and [k.id for k in req.knowledge] == [seed_id]
    assert req.start_point.id == "sp" and req.start_point.text == "// code of sp"
    assert [c.id for c in req.children] == ["kid"] and req.best_latency_ms == 2.5 and req.last_feedback == "boom"
    cand = out["candidate"]
    assert cand["source"] == "print(1)" and len(cand["code_hash"]) == 16 and cand["tokens_out"] == 7
    again = generate(st, env.runtime())
    assert gen.requests[1].seed == req.seed  # same attempt, same seed (resume redoes it identically)


def test_generation_error_becomes_a_candidate_error(env):
    resources.install(generator=Recorder(GenerationError("no code block in the reply", reply="prose", tokens_in=3)))
    out = generate(env.state(RELU), env.runtime())
    assert out["candidate"]["error"] == "no code block in the reply" and out["candidate"]["tokens_in"] == 3


def test_budget_exceeded_stops(env):
    resources.install(generator=Recorder(BudgetExceeded("token cap of 10 reached")))
    assert generate(env.state(RELU), env.runtime())["stop"] == "token cap of 10 reached"
    # a cap already reached before the call: the generator is not called at all
    resources.tokens(env.ctx)  # the run's token ledger
    gen = Recorder(Generation(source="x"))
    resources.install(generator=gen)
    resources.tokens(env.runtime(max_tokens=5).context).record("a0", "m", 10, 0, 0.0)
    out = generate(env.state(RELU), env.runtime(max_tokens=5))
    assert "stop" in out and gen.requests == []


def test_a_source_utf8_cannot_hold_fails_at_generate(env):
    # a generator handing over a lone surrogate (any generator: LLM replies are already read as UTF-8): a clear
    # generate failure naming the line, not an exception further down (red team rt7_lone_surrogate_kills_tool_node)
    resources.install(generator=Recorder(Generation(source="import torch\n# \ud800\n", tokens_out=4)))
    cand = generate(env.state(RELU), env.runtime())["candidate"]
    assert "lone UTF-16 surrogate" in cand["error"] and "line 2" in cand["error"] and cand["tokens_out"] == 4


def test_utf8_text_replaces_lone_surrogates_and_keeps_pairs():
    from evokernel.generators.base import not_utf8, utf8_text

    assert utf8_text("a\ud800b") == "a\ufffdb" and not not_utf8(utf8_text("a\ud800b"))
    assert utf8_text("\ud83d\ude00") == "\U0001f600"  # a pair, as JSON spells an emoji, is its character
    assert utf8_text("plain") == "plain" and not_utf8("x\n\udfff") and not not_utf8("plain")
