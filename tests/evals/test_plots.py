"""Report figures (evokernel.evals.plots): the data behind each figure, checked by hand, and that
every figure (including empty ones) is written as a real PNG."""
import ast
import inspect
import struct

import pytest
from evokernel.evals import metrics as M
from evokernel.evals import plots as P

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DPI = 60  # small images keep the suite fast; the checks do not depend on resolution


def png_size(path):
    """(width, height) of a PNG, after checking its signature and IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def assert_png(path, out):
    assert path == out and path.is_file()
    w, h = png_size(path)
    assert 200 <= w <= 5000 and 150 <= h <= 5000
    assert path.stat().st_size > 2000  # something was drawn


def rec(task, it, feasible, lat=None, vs=None, stage=None):
    return {"attempt_id": f"{task}#{it}", "task": task, "iteration": it,
            "stage": stage or ("draft" if it == 0 else "refine"), "feasible": feasible,
            "compiled": feasible, "failed_gate": None if feasible else "correctness",
            "latency_ms": lat, "speedup_vs_eager": vs, "context": [], "start_point": None}


# ---------------------------------------------------------------- tiers
#
# Five operators; T5 has no records in either method (a failure for both).
#
#   method A: T1 (l1) it0 ok 2.0ms 0.4x, it1 ok 1.0ms 1.2x  -> best 1.0ms -> >= 1.0x
#             T2 (l1) it0 ok 1.0ms 0.5x                     -> [0.5, 0.8) (0.5 is the lower edge)
#             T3 (l2) it0 ok 3.0ms 0.8x                     -> [0.8, 1.0)
#             T4 (l2) it0, it1 infeasible                   -> not correct
#   method B: T1 it0 ok 0.3x                                -> < 0.5x
#             T2 it0 ok, no latency / speedup on record     -> correct, no speedup on record
#             T3 it0 infeasible, it5 ok 1.0x                -> >= 1.0x (not correct with budget 3)

T1, T2, T3, T4, T5 = "cpu-l1/01_relu", "cpu-l1/02_gelu", "cpu-l2/01_fused", "cpu-l2/02_conv", "cpu-l2/03_norm"
TASKS = [T1, T2, T3, T4, T5]
CATS = {T1: "Activation", T2: "Activation", T3: "Fuse", T4: "Fuse", T5: "Fuse"}
LT05, T05_08, T08_10, GE1 = P.SPEED_TIERS


@pytest.fixture
def runs():
    a = [rec(T1, 0, True, 2.0, 0.4), rec(T1, 1, True, 1.0, 1.2), rec(T2, 0, True, 1.0, 0.5),
         rec(T3, 0, True, 3.0, 0.8), rec(T4, 0, False), rec(T4, 1, False)]
    b = [rec(T1, 0, True, 5.0, 0.3), rec(T2, 0, True), rec(T3, 0, False), rec(T3, 5, True, 2.0, 1.0)]
    return {"A": a, "B": b}


def shares(**nonzero):
    row = dict.fromkeys(P.TIERS, 0.0)
    row.update(nonzero)
    return row


def approx_rows(got, want):
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k]), k


def test_speedup_tier_edges():
    assert P.speedup_tier(0.49) == LT05
    assert P.speedup_tier(0.5) == T05_08
    assert P.speedup_tier(0.79) == T05_08
    assert P.speedup_tier(0.8) == T08_10
    assert P.speedup_tier(0.999) == T08_10
    assert P.speedup_tier(1.0) == GE1
    assert P.speedup_tier(7.0) == GE1
    assert P.speedup_tier(None) == P.UNTIMED
    assert P.speedup_tier(0.0) == P.UNTIMED


def test_tier_shares_by_hand(runs):
    got = P.tier_shares(runs, CATS, TASKS)
    assert list(got) == ["Activation", "Fuse", P.ALL]
    assert list(got["Fuse"]) == ["A", "B"]
    nc = P.NOT_CORRECT
    approx_rows(got["Activation"]["A"], shares(**{GE1: 0.5, T05_08: 0.5}))
    approx_rows(got["Fuse"]["A"], shares(**{T08_10: 1 / 3, nc: 2 / 3}))
    approx_rows(got[P.ALL]["A"], shares(**{GE1: 0.2, T05_08: 0.2, T08_10: 0.2, nc: 0.4}))
    approx_rows(got["Activation"]["B"], shares(**{LT05: 0.5, P.UNTIMED: 0.5}))
    approx_rows(got["Fuse"]["B"], shares(**{GE1: 1 / 3, nc: 2 / 3}))
    for per in got.values():
        for row in per.values():
            assert sum(row.values()) == pytest.approx(1.0)
    # the budget keeps iterations 0..2: B's T3 success at iteration 5 no longer counts
    approx_rows(P.tier_shares(runs, CATS, TASKS, budget=3)["Fuse"]["B"], shares(**{nc: 1.0}))


def test_tier_shares_agree_with_metrics(runs):
    """The "correct" part of the bars is metrics.correctness, per category."""
    got = P.tier_shares(runs, CATS, TASKS)
    for method, rs in runs.items():
        per_cat = M.per_category(rs, CATS, TASKS)
        for c, row in per_cat.items():
            assert 1 - got[c][method][P.NOT_CORRECT] == pytest.approx(row["correctness"])


def test_tier_counts_defaults(runs):
    # no category map: the suite prefix; no task list: the method's own tasks; no "all" group
    got = P.tier_counts(runs["A"], overall=False)
    assert list(got) == ["cpu-l1", "cpu-l2"]
    assert got["cpu-l2"]["n"] == 2  # T3, T4 (T5 is not in A's records)
    assert got["cpu-l2"][P.NOT_CORRECT] == 1 and got["cpu-l2"][T08_10] == 1
    # a single category gets no redundant "all" group; unmapped tasks go to "uncategorized"
    assert list(P.tier_counts(runs["A"], {T1: "X", T2: "X"}, [T1, T2])) == ["X"]
    assert list(P.tier_counts(runs["A"], {T1: "X"}, [T1, T2])) == ["X", M.UNCATEGORIZED, P.ALL]


def test_tier_shares_union_of_tasks(runs):
    # without a task list every method is judged on the union of tasks (T1..T4)
    got = P.tier_shares(runs, CATS)
    approx_rows(got["Fuse"]["B"], shares(**{GE1: 0.5, P.NOT_CORRECT: 0.5}))


def test_correctness_speedup_tiers_png(tmp_path, runs):
    out = tmp_path / "figs" / "tiers.png"  # parent folder is created
    assert_png(P.correctness_speedup_tiers(runs, CATS, TASKS, out, subtitle="model x, T=10, seed 0", dpi=DPI), out)
    out2 = tmp_path / "tiers_default.png"
    assert_png(P.correctness_speedup_tiers(runs, None, None, out2, budget=3, dpi=DPI), out2)


# ---------------------------------------------------------------- cumulative success


def test_curves_from_records_by_hand(runs):
    # A: T1, T2, T3 solved at iteration 0; T4, T5 never. B: T1, T2 at 0, T3 at 5.
    curves = P.curves_from_records(runs, TASKS)
    assert curves["A"] == pytest.approx([0.6] * 6)  # budget: largest iteration across methods + 1 = 6
    assert curves["B"] == pytest.approx([0.4] * 5 + [0.6])
    assert curves["B"] == M.cumulative_success(runs["B"], TASKS, 6)
    assert P.curves_from_records(runs, TASKS, budget=2)["B"] == pytest.approx([0.4, 0.4])


def test_curve_points():
    assert P.curve_points([None, 0.2, 0.5]) == [(2, 0.2), (3, 0.5)]
    assert P.curve_points([]) == []


def test_cumulative_success_png(tmp_path, runs):
    out = tmp_path / "cum.png"
    assert_png(P.cumulative_success(P.curves_from_records(runs, TASKS), out, subtitle="T=6", dpi=DPI), out)


# ---------------------------------------------------------------- trajectories
#
#   it0 infeasible | it1 4.0ms 0.5x | it2 5.0ms 0.4x | it3 2.0ms 1.0x | it4 infeasible
#   implied eager latency (latency x speedup): 2.0, 2.0, 2.0 -> median 2.0

TRAJ = [rec("t", 0, False), rec("t", 1, True, 4.0, 0.5), rec("t", 2, True, 5.0, 0.4),
        rec("t", 3, True, 2.0, 1.0), rec("t", 4, False), rec("other", 0, True, 0.1, 9.0)]


def test_best_so_far_by_hand():
    assert P.best_so_far(TRAJ, "t") == [(1, 4.0), (2, 4.0), (3, 2.0), (4, 2.0)]
    assert P.best_so_far(TRAJ, "t", "speedup_vs_first") == [(1, 1.0), (2, 1.0), (3, 2.0), (4, 2.0)]
    assert P.best_so_far(TRAJ, "t", "speedup_vs_eager") == [(1, 0.5), (2, 0.5), (3, 1.0), (4, 1.0)]
    assert P.best_so_far(TRAJ, "missing") == []
    # a feasible but untimed kernel does not start the curve
    assert P.best_so_far([rec("u", 0, True), rec("u", 1, True, 3.0)], "u") == [(1, 3.0)]
    with pytest.raises(ValueError):
        P.best_so_far(TRAJ, "t", "throughput")


def test_best_so_far_ends_at_metrics_values():
    assert P.best_so_far(TRAJ, "t")[-1][1] == M.best_kernels(TRAJ)["t"]["latency_ms"]
    assert P.best_so_far(TRAJ, "t", "speedup_vs_first")[-1][1] == M.speedup_vs_first(TRAJ)["t"]
    assert P.best_so_far(TRAJ, "t", "speedup_vs_eager")[-1][1] == M.speedup_vs_eager(TRAJ)["t"]


def test_attempt_points_by_hand():
    lat = P.attempt_points(TRAJ, "t")
    assert lat["feasible"] == [(1, 4.0, "refine"), (2, 5.0, "refine"), (3, 2.0, "refine")]
    assert lat["failed"] == [0, 4]
    assert lat["eager_ms"] == pytest.approx(2.0)
    vf = P.attempt_points(TRAJ, "t", "speedup_vs_first")
    assert [v for _, v, _ in vf["feasible"]] == pytest.approx([1.0, 0.8, 2.0])
    assert vf["eager_ms"] is None
    ve = P.attempt_points(TRAJ, "t", "speedup_vs_eager")
    assert [v for _, v, _ in ve["feasible"]] == pytest.approx([0.5, 0.4, 1.0])


@pytest.mark.parametrize("metric", P.METRICS)
def test_speedup_trajectories_png(tmp_path, metric):
    out = tmp_path / f"traj_{metric}.png"
    # "never" has records but no feasible kernel; its panel says so
    records = TRAJ + [rec("never", 0, False)]
    got = P.speedup_trajectories(records, ["t", "other", "never", "t"], out, metric=metric,
                                 subtitle="seed 0", dpi=DPI)
    assert_png(got, out)


def test_speedup_trajectories_rejects_unknown_metric(tmp_path):
    with pytest.raises(ValueError):
        P.speedup_trajectories(TRAJ, ["t"], tmp_path / "x.png", metric="throughput")


# ---------------------------------------------------------------- Q values
#
#   0 draft   a 0 -> 0.5, b 0 -> 0.5
#   1 refine  a 0 -> -0.3
#   2 import  a q1=0.9 q2=0.1, c q1=0.2
#   3 draft   a 0.9 -> 0.95
#   4 draft   b 0.5 -> 0.75, c 0.2 -> 0.6
# draft updates: a 2, b 2, c 1 (imports do not count); refine: a 1.


def u(item, before, after):
    return {"item": item, "q_before": before, "q_after": after}


LEDGER = [
    {"attempt_id": "x#0", "task": "x", "iteration": 0, "stage": "draft", "r": 1.0, "r_hat": 1.0, "alpha": 0.5,
     "updates": [u("a", 0.0, 0.5), u("b", 0.0, 0.5)]},
    {"attempt_id": "x#1", "task": "x", "iteration": 1, "stage": "refine", "r": -0.6, "r_hat": -0.6, "alpha": 0.5,
     "updates": [u("a", 0.0, -0.3)]},
    {"attempt_id": "import:m", "task": "", "iteration": 0, "stage": "import",
     "set": {"a": {"q1": 0.9, "q2": 0.1}, "c": {"q1": 0.2}}},
    {"attempt_id": "y#0", "task": "y", "iteration": 0, "stage": "draft", "r": 1.0, "r_hat": 1.0, "alpha": 0.5,
     "updates": [u("a", 0.9, 0.95)]},
    {"attempt_id": "z#0", "task": "z", "iteration": 0, "stage": "draft", "r": 1.0, "r_hat": 1.0, "alpha": 0.5,
     "updates": [u("b", 0.5, 0.75), u("c", 0.2, 0.6)]},
]


def test_q_series_by_hand():
    draft = P.q_series(LEDGER, "draft", top=2)
    assert draft == {"a": [(0, 0.5), (2, 0.9), (3, 0.95)], "b": [(0, 0.5), (4, 0.75)]}
    assert list(draft) == ["a", "b"]  # tie on 2 updates: first seen first
    assert P.q_series(LEDGER, "draft", top=None)["c"] == [(2, 0.2), (4, 0.6)]
    assert P.q_series(LEDGER, "refine") == {"a": [(1, -0.3), (2, 0.1)]}
    assert P.q_series(LEDGER, "draft", top=0) == {}
    assert P.q_series([], "refine") == {}
    with pytest.raises(ValueError):
        P.q_series(LEDGER, "import")


def test_q_values_png(tmp_path):
    out = tmp_path / "q.png"
    assert_png(P.q_values(LEDGER, out, top=10, subtitle="run r1", dpi=DPI), out)
    # draft updates only: the refine panel says "no updates"
    out2 = tmp_path / "q_draft_only.png"
    assert_png(P.q_values(LEDGER[:1], out2, dpi=DPI), out2)


def test_q_values_reads_a_real_ledger(tmp_path):
    """The ledger the memory writes (ValueLedger) plots as is."""
    from evokernel.memory.values import ValueLedger
    led = ValueLedger(tmp_path / "values.jsonl", alpha=0.5)
    led.record("t#0", "draft", 1.0, ["i1", "i2"], task="t", iteration=0)
    led.record("t#1", "refine", 0.3, ["i1"], task="t", iteration=1)
    entries = M.load_attempts(tmp_path / "values.jsonl")
    assert P.q_series(entries, "draft") == {"i1": [(0, 0.5)], "i2": [(0, 0.5)]}
    assert P.q_series(entries, "refine") == {"i1": [(1, pytest.approx(0.15))]}
    out = tmp_path / "q_real.png"
    assert_png(P.q_values(entries, out, dpi=DPI), out)


# ---------------------------------------------------------------- ablations


def test_ablation_table_accepts_tuples_bare_means_and_spread_dicts():
    t = P.ablation_table({
        "value": {"correctness": (0.8, 0.1), "median_speedup": 1.5},
        "none": {"correctness": M.mean_and_spread([0.5]), "median_speedup": (1.1, None)},
    })
    assert t["metrics"] == ["correctness", "median_speedup"]
    assert t["policies"] == ["value", "none"]
    assert t["mean"] == {"correctness": {"value": 0.8, "none": 0.5}, "median_speedup": {"value": 1.5, "none": 1.1}}
    assert t["err"] == {"correctness": {"value": 0.1, "none": None}, "median_speedup": {"value": None, "none": None}}
    # a policy lacking a metric gets None
    t2 = P.ablation_table({"a": {"x": 1.0}, "b": {"y": (2.0, 0.5)}})
    assert t2["mean"] == {"x": {"a": 1.0, "b": None}, "y": {"a": None, "b": 2.0}}


def test_ablation_bars_png(tmp_path):
    out = tmp_path / "abl.png"
    values = {"value": {"correctness": (0.8, 0.05), "median_speedup": (1.6, 0.2)},
              "similarity": {"correctness": (0.7, 0.04), "median_speedup": (1.3, None)},
              "none": {"correctness": 0.55}}
    assert_png(P.ablation_bars(values, out, subtitle="3 seeds, T=10", dpi=DPI), out)


# ---------------------------------------------------------------- empty inputs


@pytest.mark.parametrize("name, call", [
    ("tiers_none", lambda o: P.correctness_speedup_tiers({}, None, None, o, dpi=DPI)),
    ("tiers_no_tasks", lambda o: P.correctness_speedup_tiers({"A": []}, {}, [], o, dpi=DPI)),
    ("cum_none", lambda o: P.cumulative_success({}, o, dpi=DPI)),
    ("cum_undefined", lambda o: P.cumulative_success({"A": [], "B": [None, None]}, o, dpi=DPI)),
    ("traj_no_records", lambda o: P.speedup_trajectories([], ["t"], o, dpi=DPI)),
    ("traj_no_tasks", lambda o: P.speedup_trajectories(TRAJ, [], o, dpi=DPI)),
    ("q_none", lambda o: P.q_values([], o, dpi=DPI)),
    ("q_imports_only", lambda o: P.q_values(LEDGER[2:3], o, dpi=DPI)),
    ("abl_none", lambda o: P.ablation_bars({}, o, dpi=DPI)),
    ("abl_all_missing", lambda o: P.ablation_bars({"a": {"x": None}}, o, subtitle="seeds: 0", dpi=DPI)),
])
def test_empty_inputs_give_a_no_data_figure(tmp_path, name, call):
    out = tmp_path / f"{name}.png"
    assert_png(call(out), out)


def test_empty_helpers():
    assert P.tier_shares({}) == {}
    assert P.tier_shares({"A": []}, tasks=[]) == {}
    assert P.curves_from_records({}) == {}
    assert P.curves_from_records({"A": []}) == {"A": []}
    assert P.ablation_table({}) == {"metrics": [], "policies": [], "mean": {}, "err": {}}


def test_no_pyplot_in_library_code():
    """Figures are built on matplotlib.figure.Figure with the Agg canvas, never pyplot's global state."""
    tree = ast.parse(inspect.getsource(P))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    assert not any("pyplot" in name for name in imported)


def test_item_labels_drop_the_run_id():
    from evokernel.evals.plots import _item_label

    assert _item_label("trace:20261122-051917-6f05aa:cpu-l1/14_rms_norm:2") == "trace 14_rms_norm #2"
    assert _item_label("exp:r:relu:0") == "exp relu #0"
    assert _item_label("seed:cpu:00_candidate_format") == "seed:cpu:00_candidate_format"


# ---------------------------------------------------------------- baselines (eager and torch.compile)


def test_baseline_speedups_by_hand():
    records = [rec("a", 0, True, 2.0, 0.5) | {"speedup_vs_compile": 0.4},
               rec("a", 1, True, 1.0, 1.5) | {"speedup_vs_compile": 1.1},  # the fastest kernel's own numbers
               rec("b", 0, True, 1.0, 2.0) | {"speedup_vs_compile": None, "compile_error": "inductor failed"},
               rec("c", 0, False)]
    assert P.baseline_speedups(records) == {"a": {"eager": 1.5, "compile": 1.1}, "b": {"eager": 2.0, "compile": None}}


def test_baselines_png(tmp_path):
    records = [rec("a", 0, True, 1.0, 1.5) | {"speedup_vs_compile": 0.7},
               rec("b", 0, True, 1.0, 2.0) | {"compile_error": "inductor failed"}]
    out = tmp_path / "baselines.png"
    assert_png(P.baselines(records, out, subtitle="seed 0", dpi=DPI), out)
    empty = tmp_path / "none.png"
    assert_png(P.baselines([rec("c", 0, False)], empty, dpi=DPI), empty)
