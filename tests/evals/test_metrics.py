"""Paper metrics over attempt logs: hand-computed cases (evokernel.evals.metrics)."""
import json
import math

import pytest
from evokernel.evals import metrics as M

# ---------------------------------------------------------------- the synthetic log
#
# Four operators, budget T = 4 (iterations 0..3). Columns: iteration, compiled, feasible,
# failed_gate, latency_ms, speedup_vs_eager.
#
#   A cpu-l1/01_relu   (Activation)   0 C ok 4.0 0.5 | 1 - compile | 2 C ok 1.0 2.0 | 3 C ok 2.0 1.0
#   B cpu-l1/02_gelu   (Activation)   0 - generate   | 1 C correct | 2 C ok 3.0 0.9 | 3 C ok 2.0 1.5
#   C cpu-l2/01_fused  (Fuse)         0 - compile    | 1 C ok 5.0 0.8 | 2 C runtime | 3 C timeout
#   D cpu-l2/02_conv   (Convolution)  0 - hack       | 1 - compile | 2 C correctness | 3 - generate
#
# CR: compiled A 3 + B 3 + C 3 + D 1 = 10 of 16 attempts -> 0.625 (the two "generate" failures
#     are in the denominator as generated kernels that did not compile).
# Acc: A, B, C have a feasible kernel, D none -> 3/4 = 0.75.
# Round 1 (iteration 0): compiled only A -> CR 1/4 = 0.25; feasible only A -> Acc 1/4 = 0.25.
# Within-operator speedup (first feasible / best): A 4.0/1.0 = 4.0, B 3.0/2.0 = 1.5; C has a single
#     feasible kernel -> excluded; D none. Over [1.5, 4.0] (linear interpolation):
#     median = 2.75, q1 = 1.5 + 0.25 * 2.5 = 2.125, q3 = 1.5 + 0.75 * 2.5 = 3.375, n = 2.
# Best kernel (lowest latency) speedup vs eager: A 2.0, B 1.5, C 0.8 -> geomean = 2.4 ** (1/3).
# fast_p over all 4 operators, strict ">":
#     p=0   A B C        -> 0.75 (= Acc)
#     p=0.8 A B (C = 0.8 is not > 0.8) -> 0.5
#     p=1   A B          -> 0.5
#     p=1.5 A (B = 1.5 is not > 1.5)   -> 0.25
#     p=2   none (A = 2.0 is not > 2)  -> 0.0
# Cumulative success: first feasible iteration A 0, B 2, C 1 ->
#     k=1: A -> 0.25; k=2: A C -> 0.5; k=3: A B C -> 0.75; k=4: 0.75.
# Per category: Activation (A, B) CR 6/8, Acc 1, round 1 CR 1/2 Acc 1/2, vs-first median 2.75;
#     Fuse (C) CR 3/4, Acc 1; Convolution (D) CR 1/4, Acc 0.
# Budget 2 (iterations 0, 1): CR 3/8 (A0, B1, C1), Acc 2/4 (A, C), vs-first none.
# Resources: every attempt 100 tokens in, 10 out, $0.01; time = 1000 + 10 * k for the k-th record
#     (A first) -> wall 150 s in total, 30 s per task.

A, B, C, D = "cpu-l1/01_relu", "cpu-l1/02_gelu", "cpu-l2/01_fused", "cpu-l2/02_conv"
TASKS = [A, B, C, D]
CATS = {A: "Activation", B: "Activation", C: "Fuse", D: "Convolution"}

ROWS = [
    (A, 0, True, True, None, 4.0, 0.5),
    (A, 1, False, False, "compile", None, None),
    (A, 2, True, True, None, 1.0, 2.0),
    (A, 3, True, True, None, 2.0, 1.0),
    (B, 0, False, False, "generate", None, None),
    (B, 1, True, False, "correctness", None, None),
    (B, 2, True, True, None, 3.0, 0.9),
    (B, 3, True, True, None, 2.0, 1.5),
    (C, 0, False, False, "compile", None, None),
    (C, 1, True, True, None, 5.0, 0.8),
    (C, 2, True, False, "runtime", None, None),
    (C, 3, True, False, "timeout", None, None),
    (D, 0, False, False, "hack", None, None),
    (D, 1, False, False, "compile", None, None),
    (D, 2, True, False, "correctness", None, None),
    (D, 3, False, False, "generate", None, None),
]


def rec(task, it, compiled, feasible, gate=None, lat=None, vs=None, k=0, **extra):
    r = {"attempt_id": f"{task}#{it}", "task": task, "iteration": it, "stage": "draft" if it == 0 else "refine",
         "context": [], "start_point": None, "code_hash": f"h{k}", "feasible": feasible, "failed_gate": gate,
         "compiled": compiled, "latency_ms": lat, "eager_ms": (lat * vs) if lat and vs else None,
         "speedup_vs_eager": vs, "reward": 0.0, "tokens_in": 100, "tokens_out": 10, "cost_usd": 0.01,
         "model": "fake", "time": 1000.0 + 10 * k}
    r.update(extra)
    return r


@pytest.fixture
def log():
    return [rec(*row, k=k) for k, row in enumerate(ROWS)]


# ---------------------------------------------------------------- CR, Acc, round 1


def test_compile_rate_counts_generation_failures_as_not_compiled(log):
    assert M.compile_rate(log) == pytest.approx(10 / 16)
    assert M.compile_rate(log, budget=2) == pytest.approx(3 / 8)
    assert M.compile_rate([rec(A, 0, False, False, "generate")]) == 0.0
    assert M.compile_rate([]) is None


def test_correctness_counts_listed_tasks_without_records_as_failures(log):
    assert M.correctness(log, TASKS) == 0.75
    assert M.correctness(log) == 0.75  # tasks taken from the records
    assert M.correctness(log, TASKS + ["cpu-l2/99_missing"]) == 3 / 5
    assert M.correctness(log, TASKS, budget=2) == 0.5
    assert M.correctness(log, TASKS, budget=1) == 0.25
    assert M.correctness(log, [A, D]) == 0.5  # records of unlisted tasks are ignored
    assert M.correctness([], TASKS) == 0.0
    assert M.correctness([]) is None


def test_round1(log):
    assert M.round1(log, TASKS) == {"compile_rate": 0.25, "correctness": 0.25}
    assert M.round1([], TASKS) == {"compile_rate": None, "correctness": 0.0}


# ---------------------------------------------------------------- speedups


def test_speedup_vs_first_excludes_single_feasible_and_never_feasible(log):
    assert M.speedup_vs_first(log) == {A: 4.0, B: 1.5}
    d = M.median_iqr(M.speedup_vs_first(log).values())
    assert d == {"n": 2, "median": 2.75, "q1": 2.125, "q3": 3.375}
    # within budget 3, B has only one feasible kernel (iteration 2)
    assert M.speedup_vs_first(M.within_budget(log, 3)) == {A: 4.0}
    assert M.speedup_vs_first([]) == {}


def test_speedup_vs_first_ignores_null_latencies():
    rs = [rec(A, 0, True, True, None, None, None), rec(A, 1, True, True, None, 3.0, 1.0),
          rec(A, 2, True, True, None, None, None), rec(A, 3, True, True, None, 1.5, 2.0)]
    # the first *timed* feasible kernel is the base: 3.0 / 1.5
    assert M.speedup_vs_first(rs) == {A: 2.0}
    # one timed kernel only -> excluded
    assert M.speedup_vs_first(rs[:3]) == {}


def test_speedup_vs_eager_and_geomean(log):
    assert M.speedup_vs_eager(log) == {A: 2.0, B: 1.5, C: 0.8}
    assert M.geomean(M.speedup_vs_eager(log).values()) == pytest.approx(2.4 ** (1 / 3))
    assert M.geomean([]) is None
    assert M.geomean([2.0, 8.0, None, 0.0]) == pytest.approx(4.0)


def test_best_kernel_is_lowest_latency_not_highest_recorded_speedup():
    # same verdict ratio semantics as evokernel.runtime.run_dir.summarize_task: best = min latency
    rs = [rec(A, 0, True, True, None, 1.0, 1.1), rec(A, 1, True, True, None, 2.0, 3.0)]
    assert M.speedup_vs_eager(rs) == {A: 1.1}


def test_fast_p_strict_and_over_all_tasks(log):
    assert M.fast_p(log, TASKS) == {"0": 0.75, "0.8": 0.5, "1": 0.5, "1.5": 0.25, "2": 0.0}
    assert M.fast_p(log, TASKS)["0"] == M.correctness(log, TASKS)
    # a listed task without records counts in the denominator
    assert M.fast_p(log, TASKS + ["x/none"], ps=(1,)) == {"1": 2 / 5}
    # over correct operators only (the paper's Table 4 reading): A, B of A, B, C beat eager
    assert M.fast_p(log, TASKS, ps=(1,), among_correct=True) == {"1": pytest.approx(2 / 3)}
    assert M.fast_p([], [], ps=(1,)) == {"1": None}


def test_fast_0_equals_correctness_when_speedup_unknown():
    rs = [rec(A, 0, True, True, None, None, None), rec(B, 0, False, False, "compile")]
    assert M.fast_p(rs, [A, B], ps=(0, 1)) == {"0": 0.5, "1": 0.0}


# ---------------------------------------------------------------- curves, grouping, resources


def test_cumulative_success(log):
    assert M.cumulative_success(log, TASKS, 4) == [0.25, 0.5, 0.75, 0.75]
    assert M.cumulative_success(log, TASKS) == [0.25, 0.5, 0.75, 0.75]  # budget from the log
    assert M.cumulative_success(log, TASKS, 6) == [0.25, 0.5, 0.75, 0.75, 0.75, 0.75]
    assert M.cumulative_success(log, TASKS + ["x/none"], 2) == [0.2, 0.4]
    assert M.cumulative_success([], TASKS, 2) == [0.0, 0.0]
    assert M.cumulative_success([]) == []


def test_per_category(log):
    pc = M.per_category(log, CATS, TASKS)
    assert set(pc) == {"Activation", "Fuse", "Convolution"}
    act = pc["Activation"]
    assert act["n_tasks"] == 2 and act["attempts"] == 8
    assert act["compile_rate"] == 0.75 and act["correctness"] == 1.0
    assert act["round1_compile_rate"] == 0.5 and act["round1_correctness"] == 0.5
    assert act["median_speedup_vs_first"] == 2.75 and act["iqr_speedup_vs_first"] == [2.125, 3.375]
    assert act["geomean_speedup_vs_eager"] == pytest.approx(math.sqrt(3.0))
    assert act["fast_p"] == {"0": 1.0, "0.8": 1.0, "1": 1.0, "1.5": 0.5, "2": 0.0}
    assert pc["Fuse"]["compile_rate"] == 0.75 and pc["Fuse"]["correctness"] == 1.0
    assert pc["Fuse"]["n_speedup_vs_first"] == 0 and pc["Fuse"]["median_speedup_vs_first"] is None
    assert pc["Convolution"]["compile_rate"] == 0.25 and pc["Convolution"]["correctness"] == 0.0
    assert pc["Convolution"]["geomean_speedup_vs_eager"] is None


def test_per_category_defaults_and_unmapped(log):
    by_suite = M.per_category(log)
    assert {k: v["correctness"] for k, v in by_suite.items()} == {"cpu-l1": 1.0, "cpu-l2": 0.5}
    partial = M.per_category(log, {A: "Activation"}, TASKS)
    assert partial["uncategorized"]["n_tasks"] == 3
    assert M.suite_of("noslash") == "uncategorized"


def test_tokens_cost_time(log):
    r = M.tokens_cost_time(log)
    assert (r["attempts"], r["tokens_in"], r["tokens_out"]) == (16, 1600, 160)
    assert r["cost_usd"] == pytest.approx(0.16)
    assert r["wall_s"] == 150.0
    assert r["per_task"][B] == {"attempts": 4, "tokens_in": 400, "tokens_out": 40,
                                "cost_usd": pytest.approx(0.04), "wall_s": 30.0}
    empty = M.tokens_cost_time([])
    assert empty["attempts"] == 0 and empty["wall_s"] is None and empty["per_task"] == {}


# ---------------------------------------------------------------- summary


def test_summarize_method(log):
    s = M.summarize_method(log, TASKS, CATS, budget=4)
    assert json.loads(json.dumps(s, allow_nan=False)) == s  # JSON-ready
    assert s["compile_rate"] == 0.625 and s["correctness"] == 0.75
    assert s["round1_compile_rate"] == 0.25 and s["round1_correctness"] == 0.25
    assert s["median_speedup_vs_first"] == 2.75
    assert s["iqr_speedup_vs_first"] == [2.125, 3.375]
    assert s["n_speedup_vs_first"] == 2
    assert s["geomean_speedup_vs_eager"] == pytest.approx(2.4 ** (1 / 3))
    assert s["fast_p"] == {"0": 0.75, "0.8": 0.5, "1": 0.5, "1.5": 0.25, "2": 0.0}
    assert s["cumulative_success"] == [0.25, 0.5, 0.75, 0.75]
    # the curve starts at round-1 Acc and ends at Acc
    assert s["cumulative_success"][0] == s["round1_correctness"]
    assert s["cumulative_success"][-1] == s["correctness"]
    assert set(s["per_category"]) == {"Activation", "Fuse", "Convolution"}
    assert (s["tokens_in"], s["tokens_out"], s["wall_s"]) == (1600, 160, 150.0)
    assert s["cost_usd"] == pytest.approx(0.16)
    for key in ("compile_rate", "correctness", "round1_compile_rate", "round1_correctness",
                "median_speedup_vs_first", "iqr_speedup_vs_first", "n_speedup_vs_first",
                "geomean_speedup_vs_eager", "fast_p", "per_category", "cumulative_success",
                "tokens_in", "tokens_out", "cost_usd", "wall_s"):
        assert key in s


def test_summarize_method_budget_and_task_filter(log):
    s = M.summarize_method(log, TASKS + ["x/none"], CATS, budget=2)
    assert s["n_tasks"] == 5 and s["n_attempts"] == 8
    assert s["compile_rate"] == 3 / 8 and s["correctness"] == 2 / 5
    assert s["cumulative_success"] == [0.2, 0.4]
    assert s["n_speedup_vs_first"] == 0 and s["median_speedup_vs_first"] is None
    assert s["iqr_speedup_vs_first"] == [None, None]
    assert s["per_category"]["uncategorized"]["correctness"] == 0.0
    # records of tasks outside the list are ignored everywhere
    only_d = M.summarize_method(log, [D], CATS)
    assert only_d["n_attempts"] == 4 and only_d["compile_rate"] == 0.25 and only_d["correctness"] == 0.0


def test_summarize_method_empty():
    s = M.summarize_method([], [A, B], None, budget=3)
    assert json.loads(json.dumps(s, allow_nan=False)) == s
    assert s["compile_rate"] is None and s["correctness"] == 0.0
    assert s["cumulative_success"] == [0.0, 0.0, 0.0]
    assert s["fast_p"]["0"] == 0.0 and s["geomean_speedup_vs_eager"] is None
    assert s["wall_s"] is None and s["tokens_in"] == 0


# ---------------------------------------------------------------- statistics


def test_quantile_matches_numpy_linear():
    np = pytest.importorskip("numpy")
    xs = [3.6, 1.38, 10.05, 200.0, 1.0, 2.5, 7.0]
    for q in (0, 0.1, 0.25, 0.5, 0.75, 0.9, 1):
        assert M.quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))
    assert M.quantile([1.0, 2.0, 3.0, 4.0], 0.25) == 1.75
    assert M.quantile([5.0], 0.75) == 5.0
    assert M.quantile([], 0.5) is None
    with pytest.raises(ValueError):
        M.quantile([1.0], 1.5)


def test_mean_and_spread():
    r = M.mean_and_spread([0.8, 0.9, 1.0])
    assert r["n"] == 3 and r["mean"] == pytest.approx(0.9)
    assert r["std"] == pytest.approx(0.1)  # sample std: sqrt((0.01 + 0 + 0.01) / 2)
    assert (r["min"], r["max"]) == (0.8, 1.0)
    assert M.mean_and_spread([2.0, None, 4.0])["std"] == pytest.approx(math.sqrt(2.0))
    assert M.mean_and_spread([5.0]) == {"n": 1, "mean": 5.0, "std": None, "min": 5.0, "max": 5.0}
    assert M.mean_and_spread([])["mean"] is None


def test_paired_differences():
    a = {"t1": 2.0, "t2": 1.0, "t3": 3.0, "t4": 5.0, "only_a": 1.0, "none": None}
    b = {"t1": 1.0, "t2": 1.0, "t3": 4.0, "t4": 1.0, "only_b": 2.0, "none": 1.0}
    r = M.paired_differences(a, b)
    # diffs over t1..t4: +1, 0, -1, +4 -> mean 1.0, median 0.5
    assert r["n"] == 4 and r["mean_diff"] == 1.0 and r["median_diff"] == 0.5
    assert (r["wins"], r["losses"], r["ties"]) == (2, 1, 1)
    assert (r["only_a"], r["only_b"]) == (1, 2)
    assert M.paired_differences(a, b, tol=1.0)["ties"] == 3
    e = M.paired_differences({}, {})
    assert e["n"] == 0 and e["mean_diff"] is None and e["median_diff"] is None


# ---------------------------------------------------------------- loading


def test_load_attempts_torn_last_line_and_duplicates(tmp_path, log):
    p = tmp_path / "attempts.jsonl"
    body = "".join(json.dumps(r) + "\n" for r in log[:3])
    dup = json.dumps(dict(log[0], feasible=False)) + "\n"  # a re-logged attempt: the first wins
    p.write_text(body + dup + "\n" + json.dumps(log[3])[:25])  # blank line, then a torn append
    got = M.load_attempts(p)
    assert [r["attempt_id"] for r in got] == [r["attempt_id"] for r in log[:3]]
    assert got[0]["feasible"] is True


def test_load_attempts_clean_and_corrupt_middle(tmp_path, log):
    p = tmp_path / "attempts.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in log))
    assert M.load_attempts(p) == log
    p.write_text(json.dumps(log[0]) + "\n{not json\n" + json.dumps(log[1]) + "\n")
    with pytest.raises(ValueError, match="line 2"):
        M.load_attempts(p)
    p.write_text("[1, 2]\n" + json.dumps(log[0]) + "\n")
    with pytest.raises(ValueError, match="not a JSON object"):
        M.load_attempts(p)
    p.write_text("")
    assert M.load_attempts(p) == []


def test_speedup_vs_compile_uses_the_fastest_kernel_and_is_absent_without_the_baseline():
    recs = [
        {"task": "a", "iteration": 0, "compiled": True, "feasible": True, "latency_ms": 2.0, "speedup_vs_compile": 0.5},
        {"task": "a", "iteration": 1, "compiled": True, "feasible": True, "latency_ms": 1.0, "speedup_vs_compile": 1.2},
        {"task": "b", "iteration": 0, "compiled": True, "feasible": True, "latency_ms": 1.0, "speedup_vs_compile": 3.0},
        {"task": "c", "iteration": 0, "compiled": True, "feasible": True, "latency_ms": 1.0},
    ]
    assert M.speedup_vs_compile(recs) == {"a": 1.2, "b": 3.0}
    s = M.summarize_method(recs)
    assert s["geomean_speedup_vs_compile"] == pytest.approx((1.2 * 3.0) ** 0.5) and s["n_speedup_vs_compile"] == 2
    assert M.summarize_method(recs[3:])["geomean_speedup_vs_compile"] is None


def test_first_speedup_vs_eager_is_the_first_timed_feasible_kernels_own_ratio():
    recs = [
        {"task": "a", "iteration": 1, "compiled": True, "feasible": True, "latency_ms": 1.0, "speedup_vs_eager": 2.0},
        {"task": "a", "iteration": 0, "compiled": True, "feasible": False, "latency_ms": None},
        {"task": "a", "iteration": 2, "compiled": True, "feasible": True, "latency_ms": 0.5, "speedup_vs_eager": 4.0},
        {"task": "b", "iteration": 0, "compiled": True, "feasible": True, "latency_ms": 2.0, "speedup_vs_eager": 0.5},
        {"task": "c", "iteration": 0, "compiled": False, "feasible": False},
    ]
    assert M.first_speedup_vs_eager(recs) == {"a": 2.0, "b": 0.5}  # iteration order, not log order
    assert M.summarize_method(recs)["geomean_first_speedup_vs_eager"] == pytest.approx(1.0)
