"""The report generator (evokernel.evals.report) on hand-built eval and run directories: numbers in
summary.json checked by hand, the sections of report.md, the figures, partial and empty evals, and
the errors for paths that are not evals.

The synthetic eval: tasks A (cpu-l1, Activation), B (cpu-l1, Matmul), C (cpu-l2, Fuse); T = 3;
groups "evo" (the reference) and "base"; seeds 0 and 1. Per arm, each task's three attempts as
(feasible, compiled, latency_ms, speedup_vs_eager), '-' meaning infeasible:

    evo  s0  A: 4.0/1.0x  2.0/2.0x  -(c)      B: -(nc)  1.0/0.5x  1.0/0.6x   C: -(nc) -(c) -(c)
    evo  s1  A: 3.0/1.5x  -(c)      1.0/4.5x  B: -(c)   -(c)      -(c)       C: -(nc) -(c) 2.0/1.0x
    base s0  A: -(nc)     4.0/1.0x  -(nc)     B: -(nc)  -(nc)     -(nc)      C: -(c)  -(c) -(c)
    base s1  A: 2.0/2.0x  -(c)      -(c)      B: 1.0/1.0x -(nc)   -(nc)      C: -(nc) -(nc) -(nc)

(c: compiled but infeasible; nc: did not compile.)
"""
import json
import math
from pathlib import Path

import pytest
from evokernel.evals import report as R

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DPI = 50  # small images keep the suite fast

A, B, C = "cpu-l1/01_a", "cpu-l1/02_b", "cpu-l2/01_c"
TASKS = [A, B, C]
CATS = {A: "Activation", B: "Matmul", C: "Fuse"}
T = 3

OK = "ok"
NC = "nc"   # did not compile
CF = "c"    # compiled, infeasible
ARMS = {
    ("evo", 0): {A: [(4.0, 1.0), (2.0, 2.0), CF], B: [NC, (1.0, 0.5), (1.0, 0.6)], C: [NC, CF, CF]},
    ("evo", 1): {A: [(3.0, 1.5), CF, (1.0, 4.5)], B: [CF, CF, CF], C: [NC, CF, (2.0, 1.0)]},
    ("base", 0): {A: [NC, (4.0, 1.0), NC], B: [NC, NC, NC], C: [CF, CF, CF]},
    ("base", 1): {A: [(2.0, 2.0), CF, CF], B: [(1.0, 1.0), NC, NC], C: [NC, NC, NC]},
}


def records(group, seed, run_id=None):
    run_id = run_id or f"{group}-{seed}"
    out = []
    for task, outcomes in ARMS[(group, seed)].items():
        for it, o in enumerate(outcomes):
            feasible = isinstance(o, tuple)
            out.append({
                "attempt_id": f"{run_id}:{task}:{it}", "task": task, "iteration": it,
                "stage": "draft" if it == 0 else "refine", "feasible": feasible,
                "compiled": feasible or o == CF, "failed_gate": None if feasible else ("build" if o == NC else "correctness"),
                "latency_ms": o[0] if feasible else None, "speedup_vs_eager": o[1] if feasible else None,
                "tokens_in": 100, "tokens_out": 10, "cost_usd": 0.01, "time": 1000.0 + 10 * len(out),
                "context": [], "start_point": None})
    return out


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


CONDITIONS = {"tolerance": "atol=rtol=1e-2", "timing": "median of 5 rounds", "hardware": "test box",
              "software": {"python": "3.12", "torch": "2.13.0"}}


def make_eval(root, arms=(("evo", 0), ("evo", 1), ("base", 0), ("base", 1)), trajectories=()):
    """An eval dir with the given arms written; eval.json always lists all four arms."""
    meta = {
        "name": "tiny", "created": "2026-11-22T07:00:00+0000", "command": "evokernel eval tiny.toml",
        "config": {"budget": T, "seeds": [0, 1], "backend": "cpu", "generator": "template",
                   "trajectories": list(trajectories)},
        "tasks": [{"id": t, "category": CATS[t], "suite": t.split("/")[0], "path": f"/x/{t}.py"} for t in TASKS],
        "stages": ["cpu-l1", "cpu-l2"],
        "groups": [{"name": "evo", "method": "evokernel", "policy": "value", "memory": "shared", "model": "template"},
                   {"name": "base", "method": "passk", "policy": "none", "memory": "none", "model": "template"}],
        "arms": [{"group": g, "seed": s, "dir": f"arms/{g}/seed-{s}"} for g in ("evo", "base") for s in (0, 1)],
        "conditions": CONDITIONS,
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "eval.json").write_text(json.dumps(meta))
    for g, s in arms:
        arm = root / "arms" / g / f"seed-{s}"
        rs = records(g, s)
        if (g, s) == ("evo", 0):  # the transfer stream: one run dir per stage, read as their union
            write_jsonl(arm / "runs" / "cpu-l1" / "attempts.jsonl", [r for r in rs if r["task"] != C])
            write_jsonl(arm / "runs" / "cpu-l2" / "attempts.jsonl", [r for r in rs if r["task"] == C])
            write_jsonl(arm / "memory" / "values.jsonl", [
                {"attempt_id": rs[1]["attempt_id"], "task": A, "iteration": 1, "stage": "refine", "r": 0.5,
                 "r_hat": 0.5, "alpha": 0.1, "updates": [{"item": "seed:x", "q_before": 0.0, "q_after": 0.05}]},
                {"attempt_id": rs[3]["attempt_id"], "task": B, "iteration": 0, "stage": "draft", "r": -1.0,
                 "r_hat": -1.0, "alpha": 0.1, "updates": [{"item": "seed:x", "q_before": 0.0, "q_after": -0.1}]}])
        else:
            write_jsonl(arm / "runs" / "all" / "attempts.jsonl", rs)
    return root


def approx(v):
    return pytest.approx(v, abs=1e-12)


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """The complete eval, reported once with figures (the slow part) and shared by several tests."""
    root = make_eval(tmp_path_factory.mktemp("full") / "eval")
    summary = R.build_report(root, dpi=DPI)
    return root, summary


# ---------------------------------------------------------------- numbers


def test_summary_metrics_by_hand(full):
    root, s = full
    assert json.loads((root / "summary.json").read_text()) == s
    assert s["complete"] is True and s["missing_arms"] == []
    assert s["progress"] == {f"{g}/seed-{k}": {"attempts": 9, "expected": 9} for g in ("evo", "base") for k in (0, 1)}
    assert (s["budget"], s["n_tasks"], s["seeds"], s["stages"]) == (3, 3, [0, 1], ["cpu-l1", "cpu-l2"])
    assert s["reference"] == "evo" and s["conditions"] == CONDITIONS
    evo, base = s["methods"]["evo"], s["methods"]["base"]
    assert list(evo["per_seed"]) == ["0", "1"]
    # per seed: evo s0 CR 7/9 (B it0 and C it0 did not compile), evo s1 CR 8/9; both solve 2 of 3
    assert evo["per_seed"]["0"]["compile_rate"] == approx(7 / 9)
    assert evo["per_seed"]["1"]["compile_rate"] == approx(8 / 9)
    assert evo["compile_rate"] == approx(15 / 18)
    assert evo["spread"]["compile_rate"]["std"] == approx((1 / 9) / math.sqrt(2))
    assert evo["correctness"] == approx(2 / 3) and evo["spread"]["correctness"]["std"] == approx(0.0)
    assert evo["round1_correctness"] == approx(1 / 3)      # only A's first draft is feasible, both seeds
    assert evo["round1_compile_rate"] == approx((1 / 3 + 2 / 3) / 2)
    # speedup vs first: s0 {A: 4/2, B: 1/1} -> median 1.5, IQR [1.25, 1.75]; s1 {A: 3/1} -> 3
    assert evo["median_speedup_vs_first"] == approx((1.5 + 3.0) / 2)
    assert evo["iqr_speedup_vs_first"] == [approx((1.25 + 3) / 2), approx((1.75 + 3) / 2)]
    # geomean vs eager: s0 best kernels A 2.0x, B 0.5x (the earliest of the 1.0 ms tie) -> 1; s1 A 4.5x, C 1.0x
    assert evo["geomean_speedup_vs_eager"] == approx((1.0 + math.sqrt(4.5)) / 2)
    # fast_p: s0 {A: 2.0, B: 0.5} -> fast_0.8 = 1/3, fast_2 = 0 (strict);
    #         s1 {A: 4.5, C: 1.0} -> fast_0.8 = 2/3, fast_1 = fast_2 = 1/3 (1.0x is not > 1)
    assert evo["fast_p"] == {"0": approx(2 / 3), "0.8": approx(0.5), "1": approx(1 / 3),
                             "1.5": approx(1 / 3), "2": approx(1 / 6)}
    assert evo["spread"]["fast_p@2"]["n"] == 2 and evo["spread"]["fast_p@2"]["max"] == approx(1 / 3)
    assert base["correctness"] == approx(0.5) and base["spread"]["correctness"]["std"] == approx((1 / 3) / math.sqrt(2))
    assert base["compile_rate"] == approx(4 / 9)
    # resources: 9 attempts x 100 tokens per seed, summed over seeds
    assert (evo["tokens_in"], evo["tokens_out"]) == (1800, 180) and evo["cost_usd"] == pytest.approx(0.18)
    assert evo["wall_s"] == approx(2 * 80.0)
    assert (evo["method"], evo["policy"], base["method"]) == ("evokernel", "value", "passk")
    json.dumps(s, allow_nan=False)


def test_per_category_stage_and_curve(full):
    _, s = full
    evo = s["methods"]["evo"]
    assert list(evo["per_category"]) == ["Activation", "Matmul", "Fuse"]
    assert evo["per_category"]["Activation"]["correctness"] == approx(1.0)
    assert evo["per_category"]["Matmul"]["correctness"] == approx(0.5)   # solved in seed 0 only
    assert evo["per_category"]["Fuse"]["geomean_speedup_vs_eager"] == approx(1.0)  # defined in seed 1 only
    # stages: cpu-l1 = {A, B}: 2/2 and 1/2 solved; cpu-l2 = {C}: 0 and 1
    assert evo["per_stage"]["cpu-l1"]["correctness"] == approx(0.75)
    assert evo["per_stage"]["cpu-l2"]["correctness"] == approx(0.5)
    assert evo["per_stage"]["cpu-l1"]["n_tasks"] == 2 and evo["per_stage"]["cpu-l2"]["n_tasks"] == 1
    assert evo["per_stage"]["cpu-l2"]["cumulative_success"] == [approx(0.0), approx(0.0), approx(0.5)]
    # cumulative success: s0 [1/3, 2/3, 2/3], s1 [1/3, 1/3, 2/3]
    assert evo["cumulative_success"] == [approx(1 / 3), approx(0.5), approx(2 / 3)]


def test_paired_differences_by_hand(full):
    _, s = full
    assert list(s["paired"]) == ["base vs evo"]
    p = s["paired"]["base vs evo"]
    assert p["seeds"] == [0, 1]
    # solved (base - evo): s0 A 1-1, B 0-1, C 0-0; s1 A 1-1, B 1-0, C 0-1
    assert p["solved"]["n"] == 6
    assert (p["solved"]["wins"], p["solved"]["losses"], p["solved"]["ties"]) == (1, 2, 3)
    assert p["solved"]["mean_diff"] == approx(-1 / 6)
    # first feasible attempt: pairs only where both solved (s0 A: 2 vs 1, s1 A: 1 vs 1)
    ffa = p["first_feasible_attempt"]
    assert (ffa["n"], ffa["wins"], ffa["ties"], ffa["only_a"], ffa["only_b"]) == (2, 1, 1, 1, 2)
    assert ffa["mean_diff"] == approx(0.5)
    # ln speedup vs eager: s0 A ln(1/2), s1 A ln(2/4.5)
    le = p["log_speedup_vs_eager"]
    assert le["n"] == 2 and le["mean_diff"] == approx((math.log(0.5) + math.log(2 / 4.5)) / 2)
    assert p["log_speedup_vs_first"]["n"] == 0  # base never has two timed feasible kernels


def test_report_markdown(full):
    root, _ = full
    md = (root / "report.md").read_text()
    for heading in ("# Evaluation report: tiny", "## Reproduce", "## Conditions", "## Results", "### fast_p",
                    "### By category", "### By stage (transfer)", "## Paired differences", "### base vs evo",
                    "## Figures", "## Definitions"):
        assert heading in md, heading
    assert "**Status: complete**" in md and "PARTIAL" not in md
    assert "evokernel eval tiny.toml" in md
    for key in ("tolerance", "timing", "hardware", "software"):
        assert f"**{key}**" in md
    assert "torch: 2.13.0" in md
    # main table rows: CR, Acc (mean ± sd in percentage points), round-1 Acc, median [IQR], geomean
    assert "| evo | 2 | 83.3% ± 7.9 | 66.7% ± 0.0 | 33.3% ± 0.0 | 2.25× ± 1.06 [2.12–2.38×] |" in md
    assert "| base | 2 | 44.4% ± 0.0 | 50.0% ± 23.6 |" in md
    assert "| Activation | 1 | 100.0% | 3.25× | 100.0% | 1.50× |" in md  # A: evo at 2.0x and 4.5x, base at 1.0x and 2.0x
    assert "| evo | cpu-l1 | 2 |" in md and "| base | cpu-l2 | 1 |" in md
    assert "| solved within T (1/0) | 6 | -16.7 pp | +0.0 pp | 1 | 2 | 3 | 0 | 0 |" in md
    # attempts by outcome, over both seeds: evo 7 feasible, 3 not built, 8 wrong; no reply lacked a candidate
    assert "| evo | 18 | 7 (39%) | 0 (0%) | 8 (44%) | 3 (17%) |" in md
    assert "positive difference means the group did better" in md
    for name in ("tiers", "cumulative_success", "trajectories", "q_values", "comparison"):
        assert f"](figures/{name}.png)" in md
    assert "docs/metrics.md" in md


def test_figures_are_pngs(full):
    root, s = full
    assert set(s["figures"]["files"]) == {"tiers", "cumulative_success", "trajectories", "q_values", "comparison"}
    for rel in s["figures"]["files"].values():
        data = (root / rel).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 2000
    assert s["figures"]["notes"]["tiers"] == "seeds pooled: 0, 1"
    # trajectories default to the reference's first seed, operators by speedup vs first: A (2.0) then B (1.0)
    assert s["figures"]["notes"]["trajectories"].endswith(f"operators: {A}, {B}")
    assert "arms/evo/seed-0/memory/values.jsonl" in s["figures"]["notes"]["q_values"]


# ---------------------------------------------------------------- partial, empty


def test_partial_eval(tmp_path):
    root = make_eval(tmp_path / "eval", arms=[("evo", 0), ("evo", 1), ("base", 0)])  # base seed 1 never ran
    f = root / "arms" / "evo" / "seed-1" / "runs" / "all" / "attempts.jsonl"
    f.write_text("".join(f.read_text().splitlines(keepends=True)[:5]))  # evo seed 1 stopped after 5 attempts
    out = tmp_path / "out"
    s = R.build_report(root, out, figures=False)
    assert not (root / "summary.json").exists() and (out / "summary.json").is_file()
    assert s["complete"] is False and s["missing_arms"] == ["base/seed-1"]
    assert s["progress"]["evo/seed-1"] == {"attempts": 5, "expected": 9}
    assert s["progress"]["base/seed-1"] == {"attempts": 0, "expected": 9}
    base = s["methods"]["base"]
    assert base["n_seeds"] == 1 and base["missing_seeds"] == [1] and list(base["per_seed"]) == ["0"]
    assert base["correctness"] == approx(1 / 3) and base["spread"]["correctness"]["std"] is None
    # evo seed 1 has A (3 attempts: solved) and B's first two attempts; C has no record: a failure
    assert s["methods"]["evo"]["per_seed"]["1"]["correctness"] == approx(1 / 3)
    assert s["methods"]["evo"]["correctness"] == approx((2 / 3 + 1 / 3) / 2)
    assert s["paired"]["base vs evo"]["seeds"] == [0] and s["paired"]["base vs evo"]["solved"]["n"] == 3
    md = (out / "report.md").read_text()
    assert "**Status: PARTIAL**" in md and "Missing arms (no attempt on record): base/seed-1" in md
    assert "| evo/seed-1 | 5 | 9 | 56% |" in md
    assert "*Figures were not generated.*" in md


def test_empty_eval(tmp_path):
    root = make_eval(tmp_path / "eval", arms=[])
    s = R.build_report(root, dpi=DPI)
    assert s["complete"] is False and s["n_attempts"] == 0 and len(s["missing_arms"]) == 4
    evo = s["methods"]["evo"]
    assert evo["correctness"] is None and evo["per_seed"] == {} and evo["n_seeds"] == 0
    assert evo["fast_p"] == {"0": None, "0.8": None, "1": None, "1.5": None, "2": None}
    assert s["paired"]["base vs evo"]["solved"]["n"] == 0
    json.dumps(s, allow_nan=False)
    md = (root / "report.md").read_text()
    assert "**No attempts on record**" in md
    files = s["figures"]["files"]
    assert files["q_values"] is None and "skipped" in s["figures"]["notes"]["q_values"]
    for name in ("tiers", "cumulative_success", "trajectories", "comparison"):
        assert (root / files[name]).read_bytes()[:8] == PNG_MAGIC
    assert "Memory item values" in md and "skipped: the reference group has no run on record" in md


# ---------------------------------------------------------------- single run directory


def test_single_run_dir(tmp_path):
    run = tmp_path / "runs" / "r1"
    ctx = {"method": "refinement", "backend": "cpu", "generator": "template", "budget": T, "seed": 3,
           "policy": "value", "memory_dir": "mem", "run_dir": "runs/r1", "strict": True}
    extra = "cpu-l2/09_never"  # listed, never attempted: a failure
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "r1", "created": "2026-11-22T05:00:00+0000",
                                              "settings": {"context": ctx, "tasks": TASKS + [extra]}}))
    rs = records("evo", 0, run_id="r1")
    write_jsonl(run / "attempts.jsonl", rs)
    # the memory lies next to the run's working directory; entries of other runs are filtered out
    write_jsonl(tmp_path / "mem" / "values.jsonl", [
        {"attempt_id": "other:x:0", "stage": "draft", "updates": [{"item": "i0", "q_before": 0, "q_after": 0.1}]},
        {"attempt_id": rs[0]["attempt_id"], "stage": "draft", "updates": [{"item": "i1", "q_before": 0, "q_after": 0.1}]}])
    s = R.build_report(run, tmp_path / "rep", dpi=DPI)
    assert s["kind"] == "run" and list(s["methods"]) == ["refinement"]
    m = s["methods"]["refinement"]
    assert list(m["per_seed"]) == ["3"] and s["seeds"] == [3]
    assert s["n_tasks"] == 4 and m["correctness"] == approx(2 / 4)
    assert list(m["per_category"]) == ["cpu-l1", "cpu-l2"]  # no categories: the suite prefix
    assert s["stages"] == ["cpu-l1", "cpu-l2"] and s["paired"] == {}
    assert s["progress"] == {"refinement/seed-3": {"attempts": 9, "expected": 12}} and s["complete"] is False
    assert s["conditions"]["tolerance"].startswith("strict") and s["conditions"]["hardware"] == "not recorded"
    assert "--method refinement" in s["command"] and "--strict" in s["command"]
    assert str(tmp_path / "mem" / "values.jsonl") in s["figures"]["notes"]["q_values"]
    assert "comparison" not in s["figures"]["files"]
    for rel in s["figures"]["files"].values():
        assert (tmp_path / "rep" / rel).read_bytes()[:8] == PNG_MAGIC
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "single run directory" in md and "Only one group (refinement)" in md


def test_real_run_dir_matches_run_summary(tmp_path):
    run = Path("/tmp/evk-full2/run-l1")
    if not (run / "run.json").exists():
        pytest.skip("no finished run at /tmp/evk-full2/run-l1")
    s = R.build_report(run, tmp_path / "rep", figures=False)
    own = json.loads((run / "summary.json").read_text())
    (m,) = s["methods"].values()
    assert m["compile_rate"] == pytest.approx(own["compile_rate"])
    assert m["per_seed"][str(s["seeds"][0])]["n_attempts"] == own["attempts"]
    assert m["geomean_speedup_vs_eager"] == pytest.approx(own["geomean_speedup_vs_eager"])


# ---------------------------------------------------------------- errors


def test_bad_paths(tmp_path):
    with pytest.raises(R.ReportError, match="no such directory"):
        R.build_report(tmp_path / "nope")
    (tmp_path / "plain").mkdir()
    with pytest.raises(R.ReportError, match=r"neither an eval directory \(no eval.json\) nor a run directory"):
        R.build_report(tmp_path / "plain")
    assert issubclass(R.ReportError, ValueError)


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({"config": {"seeds": [0]}, "tasks": [], "groups": [{"name": "g"}]}), "no 'budget'"),
    (json.dumps({"config": {"budget": 3}, "groups": [{"name": "g"}]}), "'tasks'"),
    (json.dumps({"config": {"budget": 3}, "tasks": [], "groups": []}), "'groups'"),
    (json.dumps({"config": {"budget": "x"}, "tasks": [], "groups": [{"name": "g"}]}), "must be an integer"),
])
def test_corrupt_eval_json(tmp_path, text, message):
    (tmp_path / "eval.json").write_text(text)
    with pytest.raises(R.ReportError, match=message) as e:
        R.build_report(tmp_path)
    assert str(tmp_path / "eval.json") in str(e.value)
    assert not (tmp_path / "report.md").exists()


def test_corrupt_attempt_log(tmp_path):
    root = make_eval(tmp_path / "eval", arms=[("base", 0)])
    f = root / "arms" / "base" / "seed-0" / "runs" / "all" / "attempts.jsonl"
    lines = f.read_text().splitlines()
    f.write_text("\n".join([lines[0], "{torn", *lines[1:]]) + "\n")  # malformed mid-file, not a torn tail
    with pytest.raises(R.ReportError, match="attempts.jsonl: line 2"):
        R.build_report(root, figures=False)


def test_fitted_sizes_and_categories_are_reported(tmp_path):
    fit = {"mode": "auto", "changed": {"batch_size": [4096, 288], "input_shape": [[32768], [2368]]},
           "bytes": 44859396, "est_ms": 12.9, "fits": True, "note": "", "category": "loss"}
    same = {"mode": "auto", "changed": {}, "bytes": 1 << 20, "est_ms": 3.0, "fits": True, "note": ""}
    run = tmp_path / "r1"
    run.mkdir()
    ctx = {"method": "evokernel", "backend": "cpu", "generator": "template", "budget": T, "seed": 0}
    settings = {"context": ctx, "tasks": TASKS, "inputs": {"tasks": ["x"], "overrides": {}, "fit": "auto"},
                "task_fit": {A: fit, B: same, C: same}, "categories": {A: "loss", B: "matmul", C: "fusion"}}
    (run / "run.json").write_text(json.dumps({"run_id": "r1", "settings": settings}))
    write_jsonl(run / "attempts.jsonl", records("evo", 0, run_id="r1"))
    s = R.build_report(run, tmp_path / "rep", figures=False)
    assert "--fit auto" in s["command"]
    assert s["task_sizes"][A]["changed"]["batch_size"] == [4096, 288] and s["task_sizes"][B]["changed"] == {}
    assert set(s["methods"]["evokernel"]["per_category"]) == {"loss", "matmul", "fusion"}
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Task sizes" in md and "1 of 3 operators ran with size constants scaled down" in md
    assert "| cpu-l1/01_a | batch_size 4096→288, input_shape (32768)→(2368) | 42.8 | 12.9 |" in md
    # an eval directory: the fit of each listed task, from eval.json
    root = make_eval(tmp_path / "eval")
    meta = json.loads((root / "eval.json").read_text())
    for t in meta["tasks"]:
        t["fit"] = {"mode": "none", "changed": {}}
    (root / "eval.json").write_text(json.dumps(meta))
    s = R.build_report(root, figures=False)
    assert s["task_sizes"][A] == {"mode": "none", "changed": {}}
    assert "at the sizes its file sets (`--fit none`)" in (root / "report.md").read_text()
    # runs from before --fit: no section
    s = R.build_report(make_eval(tmp_path / "old"), figures=False)
    assert s["task_sizes"] is None and "## Task sizes" not in (tmp_path / "old" / "report.md").read_text()


def test_the_report_names_operators_where_torch_compile_failed(tmp_path):
    run = tmp_path / "runs" / "r1"
    ctx = {"method": "refinement", "backend": "cpu", "generator": "template", "budget": T, "seed": 3,
           "policy": "value", "memory_dir": "mem", "run_dir": "runs/r1", "compile_baseline": True}
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "r1", "created": "2026-11-22T05:00:00+0000",
                                              "settings": {"context": ctx, "tasks": TASKS}}))
    rs = records("evo", 0, run_id="r1")
    feasible = [r for r in rs if r["feasible"]]
    assert len({r["task"] for r in feasible}) >= 2
    for r in feasible:
        if r["task"] == feasible[0]["task"]:
            r["compile_error"] = "torch.compile of the reference failed: run: BackendCompilerFailed\nmore"
        else:
            r["speedup_vs_compile"] = 1.5
    write_jsonl(run / "attempts.jsonl", rs)
    s = R.build_report(run, tmp_path / "rep", dpi=DPI)
    m = s["methods"]["refinement"]
    assert m["compile_baseline_failed"] == {feasible[0]["task"]: feasible[0]["compile_error"]}
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "torch.compile of the reference failed on 1 operator(s)" in md
    assert f"`{feasible[0]['task']}`: torch.compile of the reference failed: run: BackendCompilerFailed" in md
    assert "Speedup vs torch.compile" in md
    # the figure of both baselines is drawn only because the run asked for the compile baseline
    assert s["figures"]["files"].get("baselines") and (tmp_path / "rep" / s["figures"]["files"]["baselines"]).is_file()
    assert "Best kernel vs PyTorch eager and vs torch.compile" in md


def test_no_baselines_figure_without_the_compile_baseline(tmp_path):
    run = tmp_path / "runs" / "r1"
    ctx = {"method": "refinement", "backend": "cpu", "generator": "template", "budget": T, "seed": 3,
           "policy": "value", "memory_dir": "mem", "run_dir": "runs/r1"}
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "r1", "created": "2026-11-22T05:00:00+0000",
                                              "settings": {"context": ctx, "tasks": TASKS}}))
    write_jsonl(run / "attempts.jsonl", records("evo", 0, run_id="r1"))
    s = R.build_report(run, tmp_path / "rep", dpi=DPI)
    assert "baselines" not in s["figures"]["files"]
