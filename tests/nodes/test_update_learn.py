"""update with a model writing memory: model-written experiences and their fallbacks, distilled best practices
(LangChain fake chat models behind the LLM generator; memory/learn.py)."""
import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from evokernel.generators.llm import LLMGenerator
from evokernel.graph import resources
from evokernel.nodes.update import update

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
FAIL = {"feasible": False, "failed_gate": "correctness", "feedback": "mismatch at [0, 3]\nmax abs err 2.0",
        "gates": {"hack": True, "compile": True, "correctness": False}, "latency_ms": None, "reference_ms": None}
GOOD = ("Tried a branch-free max(x, 0) in a scalar loop. It failed the correctness check at [0, 3] with an "
        "error of 2.0. Lesson: check the comparison direction before vectorising.")
PRACTICE = "- Put OpenMP threads on the outer loop and SIMD on the contiguous inner loop (relu 2.00x)."
LLM = "fake:llm"


def ok(lat, ref=2.0):
    return {"feasible": True, "failed_gate": None, "feedback": "", "latency_ms": lat, "reference_ms": ref,
            "speedup": ref / lat, "gates": {"hack": True, "compile": True, "correctness": True}}


class Raising(FakeListChatModel):
    def _call(self, *args, **kwargs):
        raise ConnectionResetError("the endpoint went away")


def install(*replies, model=None, **kw):
    g = LLMGenerator(model or FakeListChatModel(responses=list(replies), **kw), name=LLM, max_attempts=1)
    resources.install(generator=g)
    return g


def lines(env):
    p = Path(env.ctx.run_dir) / "attempts.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def tokens(env):
    p = Path(env.ctx.run_dir) / "tokens.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def draft(env, **kw):
    cand = {"source": "SRC", "code_hash": "h1", "summary": "naive loop", "model": LLM, "tokens_in": 100,
            "tokens_out": 50, "cost_usd": 0.0}
    return env.state(RELU, context=[], knowledge=[], candidate=cand, verdict=FAIL, **kw)


def experience(env, iteration=0):
    (trace,) = env.store.get([f"trace:t:cpu-l1/01_relu:{iteration}"])
    (exp,) = env.store.get([trace.meta["experience"]])
    return exp


def test_an_llm_generator_gets_a_model_written_experience_with_its_usage_recorded(env):
    install(GOOD)
    update(draft(env), env.runtime(generator=LLM))
    exp = experience(env)
    assert exp.text == GOOD and exp.meta["experience_kind"] == "model" and exp.meta["experience_model"] == LLM
    assert exp.meta["template_text"].startswith("drafting cpu-l1/01_relu (activation): naive loop -> failed")
    assert GOOD[:100] in exp.key  # embedded by what the model wrote
    (rec,) = lines(env)
    assert rec["experience"]["kind"] == "model" and rec["experience"]["tokens_out"] > 0
    side = rec["experience"]["tokens_in"] + rec["experience"]["tokens_out"]
    assert rec["tokens_in"] + rec["tokens_out"] == 150 + side  # the attempt's usage includes the summary call
    by_id = {t["attempt_id"]: t for t in tokens(env)}
    assert by_id["t:cpu-l1/01_relu:0:experience"]["purpose"] == "experience"
    assert env.events[-1]["experience"] == "model"


@pytest.mark.parametrize("reply,why", [
    ("", "empty reply"),
    ("lesson " * 2000, "too long"),
    ("```cpp\nextern \"C\" void relu(const float* x) { }\n```", "code, not prose"),
    ("I am sorry, but I cannot summarise kernel attempts like this one.", "a refusal"),
])
def test_a_junk_summary_falls_back_to_the_template_sentence_and_says_so(env, reply, why):
    install(reply)
    update(draft(env), env.runtime(generator=LLM))
    exp = experience(env)
    assert exp.meta["experience_kind"] == "template" and why in exp.meta["experience_reason"]
    assert "failed at the correctness gate" in exp.text and "naive loop" in exp.text  # nothing lost
    assert exp.meta.get("rejected_reply", "") == reply[:500]  # what the model said is kept for inspection
    (rec,) = lines(env)
    assert rec["experience"]["kind"] == "template" and why in rec["experience"]["reason"]
    assert rec["feasible"] is False and rec["reward"] == -1.0  # the attempt itself is recorded as before


def test_an_exception_or_a_timeout_falls_back_and_the_run_goes_on(env):
    install(model=Raising(responses=["x"]))
    out = update(draft(env), env.runtime(generator=LLM))
    assert out["iteration"] == 1 and "ConnectionResetError" in experience(env).meta["experience_reason"]
    install(GOOD, sleep=3.0)
    st = draft(env, iteration=1)
    update(st, env.runtime(generator=LLM, learn_timeout=0.3))
    exp = experience(env, 1)
    assert exp.meta["experience_reason"] == "fallback: timeout" and "failed at the correctness gate" in exp.text
    assert [r["experience"]["kind"] for r in lines(env)] == ["template", "template"]


def test_the_template_generator_and_the_off_switch_store_the_template_sentence_without_a_call(env):
    update(draft(env), env.runtime())  # the template generator
    assert experience(env).meta["experience_reason"] == "template generator"
    g = install(GOOD, GOOD)  # two replies: a call would move the fake's index to 1
    update(draft(env, iteration=1), env.runtime(generator=LLM, llm_experiences=False))
    assert experience(env, 1).meta["experience_reason"] == "off" and g.chat_model.i == 0


def test_a_rerun_update_reuses_the_model_written_experience_without_asking_again(env):
    g = install(GOOD, "a different second reply that should never be stored in the memory")
    st = draft(env)
    update(st, env.runtime(generator=LLM))
    update(st, env.runtime(generator=LLM))
    assert experience(env).text == GOOD and g.chat_model.i == 1


def refine_state(env, i, parent, gain, context=()):
    env.store.add([env.trace(parent, latency_ms=4.0, summary="scalar loop")]) if not env.store.get([parent]) else None
    sp = {"id": parent, "latency_ms": 4.0, "iteration": 0}
    cand = {"source": f"#pragma omp parallel for simd\n// v{i}", "code_hash": f"h{i}", "summary": f"simd v{i}",
            "model": LLM}
    return env.state(RELU, feasible=True, iteration=i, first_feasible_iteration=0, best_latency_ms=4.0,
                     start_points=[sp], start_point=parent, context=list(context), candidate=cand,
                     verdict=ok(4.0 / gain))


def test_best_practices_are_distilled_every_k_successful_refinements_and_valued_like_any_item(env):
    from evokernel.memory.learn import DistillLog
    from evokernel.nodes.retrieve import retrieve

    install(GOOD, GOOD, PRACTICE, GOOD)  # experience, experience, distillation, experience
    rt = env.runtime(generator=LLM, distil_every=2)
    update(refine_state(env, 1, "sp", 2.0), rt)
    assert env.store.count("best_practice") == 0  # one successful refinement: K = 2 not reached
    update(refine_state(env, 2, "sp", 1.5), rt)
    (bp,) = env.store.find(kind="best_practice")
    assert bp.id.startswith("bp:learned:") and bp.meta["learned"] is True
    assert set(bp.meta["from_traces"]) >= {"trace:t:cpu-l1/01_relu:1", "trace:t:cpu-l1/01_relu:2", "sp"}
    rec = lines(env)[-1]
    assert rec["distilled"]["status"] == "stored" and rec["distilled"]["actions"][0]["id"] == bp.id
    assert {t["purpose"] for t in tokens(env) if "purpose" in t} == {"experience", "distil"}
    assert len(DistillLog(env.store.path).rounds()) == 1
    # refining retrieves it and the value update moves its Q2 like any context item
    pool = retrieve(refine_state(env, 3, "sp", 1.0), env.runtime(generator=LLM))["pool"]
    assert bp.id in [p["id"] for p in pool]
    update(refine_state(env, 3, "sp", 2.0, context=[bp.id]), rt)
    assert env.store.values.get(bp.id).n2 == 1 and env.store.values.q(bp.id, "refine") > 0


def test_no_distillation_without_a_model_or_when_switched_off(env):
    for i in (1, 2, 3):
        update(refine_state(env, i, "sp", 2.0), env.runtime(distil_every=1))  # the template generator
    assert env.store.count("best_practice") == 0
    install(GOOD)
    for i in (4, 5):
        update(refine_state(env, i, "sp", 2.0), env.runtime(generator=LLM, distil_every=0))
    assert env.store.count("best_practice") == 0 and not DistillLogPath(env).exists()


def DistillLogPath(env):
    return Path(env.store.path) / "distilled.jsonl"


@pytest.mark.parametrize("field,value", [("distil_every", -1), ("distil_min_gain", 0.9), ("distil_dedup", 0.0),
                                         ("learn_timeout", 0.0)])
def test_bad_learning_settings_are_refused(field, value):
    from evokernel.graph.context import Context

    with pytest.raises(ValueError, match=field):
        Context(**{field: value})


def test_the_baselines_never_ask_for_experiences(env):
    g = install(GOOD, GOOD)  # two replies: a call would move the fake's index to 1
    for i, method in enumerate(("passk", "refinement")):
        update(draft(env, iteration=i), env.runtime(generator=LLM, method=method))
        assert experience(env, i).meta["experience_reason"] == f"baseline {method}"
    assert g.chat_model.i == 0


def test_the_hybrid_generators_llm_writes_the_experiences_of_the_templates_drafts(env):
    from evokernel.generators.hybrid import HybridGenerator

    llm = LLMGenerator(FakeListChatModel(responses=[GOOD]), name=LLM, max_attempts=1)
    resources.install(generator=HybridGenerator(object(), llm))
    st = draft(env)
    st["candidate"]["model"] = "template"  # the template drafted it
    update(st, env.runtime(generator="hybrid:" + LLM))
    exp = experience(env)
    assert exp.text == GOOD and exp.meta["experience_model"] == "hybrid:" + LLM  # asked through the hybrid
