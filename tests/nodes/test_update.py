import json
from pathlib import Path

import pytest

from evokernel.graph import resources
from evokernel.nodes.update import update

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
FAIL = {"feasible": False, "failed_gate": "correctness", "feedback": "mismatch at [0, 3]\nmax abs err 2.0",
        "gates": {"hack": True, "compile": True, "correctness": False}, "latency_ms": None, "reference_ms": None}


def ok(lat, ref=2.0):
    return {"feasible": True, "failed_gate": None, "feedback": "", "latency_ms": lat, "reference_ms": ref,
            "speedup": ref / lat, "gates": {"hack": True, "compile": True, "correctness": True}}


def lines(env):
    p = Path(env.ctx.run_dir) / "attempts.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def test_failed_draft_updates_q1_stores_trace_and_experience_and_logs(env):
    env.store.add([env.trace("a"), env.trace("b")])
    st = env.state(RELU, context=["a", "b"], knowledge=[], candidate={"source": "SRC", "code_hash": "h1", "summary": "naive loop",
                                                                      "schedule": {"family": "ew", "simd": 0}}, verdict=FAIL)
    out = update(st, env.runtime())
    assert out["iteration"] == 1 and out["last_feedback"].startswith("mismatch") and "start_points" not in out
    v = env.store.values
    assert v.q("a", "draft") == pytest.approx(-0.1) and v.q("b", "draft") == pytest.approx(-0.1)
    (trace,) = env.store.get(["trace:t:cpu-l1/01_relu:0"])
    assert trace.text == "SRC" and trace.meta["feasible"] is False and trace.meta["failed_gate"] == "correctness"
    assert json.loads(trace.meta["schedule"]) == {"family": "ew", "simd": 0}
    (exp,) = env.store.get([trace.meta["experience"]])
    assert "failed at the correctness gate" in exp.text and "naive loop" in exp.text
    assert env.store.get(["a"])[0].meta["q1"] == pytest.approx(-0.1)  # mirrored
    (rec,) = lines(env)
    assert rec["reward"] == -1.0 and rec["context"] == ["a", "b"] and rec["failed_gate"] == "correctness"
    assert rec["compiled"] and rec["stage"] == "draft"
    assert rec["feedback"] == "mismatch at [0, 3] / max abs err 2.0"  # why it failed, in the run log itself
    assert env.events[-1]["event"] == "attempt"


def test_feasible_draft_opens_refining_and_writes_the_best_kernel(env):
    st = env.state(RELU, context=[], candidate={"source": "SRC", "code_hash": "h"}, verdict=ok(4.0))
    out = update(st, env.runtime())
    assert out["feasible"] and out["first_feasible_iteration"] == 0 and out["best_latency_ms"] == 4.0
    assert out["start_points"] == [{"id": "trace:t:cpu-l1/01_relu:0", "latency_ms": 4.0, "iteration": 0}]
    best = Path(env.ctx.run_dir) / "best" / "cpu-l1__01_relu.py"
    assert best.read_text().endswith("SRC") and out["eager_ms"] == 2.0
    (rec,) = lines(env)
    assert rec["speedup_vs_compile"] is None and rec["compile_ms"] is None  # no compile baseline in this verdict


def test_compile_baseline_figures_reach_the_run_log(env):
    v = ok(4.0) | {"compile_baseline_ms": 3.0, "speedup_vs_compile": 0.75}
    update(env.state(RELU, context=[], candidate={"source": "SRC", "code_hash": "h"}, verdict=v), env.runtime())
    (rec,) = lines(env)
    assert (rec["compile_ms"], rec["speedup_vs_compile"], rec["speedup_vs_eager"]) == (3.0, 0.75, 0.5)
    assert rec["compile_error"] is None


def test_a_failed_compile_baseline_reaches_the_run_log(env):
    why = "torch.compile of the reference failed: run: BackendCompilerFailed"
    v = ok(4.0) | {"details": {"compile_baseline": {"ok": False, "error": why}}}
    update(env.state(RELU, context=[], candidate={"source": "SRC", "code_hash": "h"}, verdict=v), env.runtime())
    (rec,) = lines(env)
    assert rec["compile_error"] == why and rec["speedup_vs_compile"] is None and rec["feasible"]


def test_usage_details_of_an_llm_attempt_reach_the_token_ledger(env):
    details = {"input": {"cache_read": 1300}, "output": {"reasoning": 150}}
    cand = {"source": "SRC", "code_hash": "h", "model": "openai:gpt-4o-mini", "tokens_in": 1800, "tokens_out": 800,
            "cost_usd": 0.002, "usage_details": details}
    update(env.state(RELU, context=[], candidate=cand, verdict=ok(4.0)), env.runtime())
    (line,) = [json.loads(x) for x in (Path(env.ctx.run_dir) / "tokens.jsonl").read_text().splitlines()]
    assert line["tokens_in"] == 1800 and line["usage_details"] == details


def test_refinement_reward_updates_start_point_and_context(env):
    sp = {"id": "sp", "latency_ms": 4.0, "iteration": 0}
    st = env.state(RELU, feasible=True, iteration=1, first_feasible_iteration=0, best_latency_ms=4.0, start_points=[sp],
                   start_point="sp", context=["c"], candidate={"source": "FAST", "code_hash": "h2"}, verdict=ok(2.0))
    out = update(st, env.runtime())
    (rec,) = lines(env)
    import math
    assert rec["reward"] == pytest.approx(math.tanh(math.log(4.0) - math.log(2.0)))
    assert env.store.values.get("sp").n2 == 1 and env.store.values.get("c").n2 == 1
    assert out["best_latency_ms"] == 2.0 and len(out["start_points"]) == 2
    (trace,) = env.store.get(["trace:t:cpu-l1/01_relu:1"])
    assert trace.meta["parent"] == "sp" and trace.meta["speedup_vs_parent"] == pytest.approx(2.0)
    assert "feasible" not in out  # already feasible: nothing to flip


def test_update_is_idempotent_when_rerun_after_a_crash(env):
    st = env.state(RELU, context=["a"], candidate={"source": "SRC", "code_hash": "h"}, verdict=FAIL)
    update(st, env.runtime())
    n_items, n_ledger = env.store.count(), len(env.store.values.state.attempts)
    update(st, env.runtime())
    assert env.store.count() == n_items and len(env.store.values.state.attempts) == n_ledger == 1
    assert len(lines(env)) == 1 and env.store.values.q("a", "draft") == pytest.approx(-0.1)


def test_an_llm_reply_is_kept_once_beside_its_attempt(env):
    from evokernel.runtime.run_dir import RunDir

    cand = {"source": "SRC", "code_hash": "h", "reply": "Here is the kernel:\n```python\nSRC\n```", "tokens_in": 9}
    st = env.state(RELU, context=[], candidate=cand, verdict=FAIL)
    update(st, env.runtime())
    update(st, env.runtime())  # re-executed after a crash: one reply line, like one attempt line
    (rec,) = lines(env)
    replies = RunDir(env.ctx.run_dir).replies()
    assert list(replies) == [rec["attempt_id"]] and replies[rec["attempt_id"]]["reply"].startswith("Here is")
    assert (Path(env.ctx.run_dir) / "replies.jsonl").read_text().count("\n") == 1
    # the template generator has no reply: no file
    env2 = env  # same run dir; a feasible attempt of another iteration without a reply adds nothing
    update(env2.state(RELU, context=[], candidate={"source": "S2", "code_hash": "h2"}, verdict=ok(1.0), iteration=1),
           env2.runtime())
    assert len(RunDir(env.ctx.run_dir).replies()) == 1


def test_stop_skips_everything(env):
    assert update(env.state(RELU, stop="cap"), env.runtime()) == {}
    assert lines(env) == []


def test_bottleneck_is_read_from_the_backends_profile():
    from evokernel.nodes.update import bottleneck

    modelled = {"feasible": True, "details": {"estimate": {"kernels": [{"bound": "mte2"}]}}}
    profiled = {"feasible": True, "details": {"diagnosis": {"bound": "vector"}}}
    assert bottleneck(modelled) == "mte2" and bottleneck(profiled) == "vector"
    assert bottleneck({"feasible": True, "details": {}}) == ""  # cpu: no pipe profile
    assert bottleneck({**modelled, "feasible": False}) == ""


@pytest.mark.parametrize("gate,cand", [
    ("generate", {"error": "no ```python block in the reply", "reply": "Summary: use a loop\nfor i in x: relu",
                  "code_hash": ""}),
    ("compile", {"source": "BROKEN SRC", "code_hash": "h", "summary": "s"}),
    ("hack", {"source": "import torch\nCHEAT", "code_hash": "h", "summary": "s"}),
])
def test_a_reply_that_is_not_a_kernel_keeps_no_code_in_memory(env, gate, cand):
    verdict = {"feasible": False, "failed_gate": gate, "feedback": f"{gate}: what went wrong", "gates": {},
               "latency_ms": None, "reference_ms": None}
    update(env.state(RELU, context=[], candidate=cand, verdict=verdict), env.runtime())
    (trace,) = env.store.get(["trace:t:cpu-l1/01_relu:0"])
    assert trace.text == "" and trace.meta["code_kept"] is False and f"failed at the {gate} gate" in trace.key
    (exp,) = env.store.get([trace.meta["experience"]])
    assert "what went wrong" in exp.text
    texts = " ".join(it.text for it in env.store.get(env.store.ids()))
    assert "Summary: use a loop" not in texts and "BROKEN SRC" not in texts and "CHEAT" not in texts
