"""The run directory: idempotent attempt log, torn lines, one run per directory, the summary."""
import json

import pytest

from evokernel.runtime.run_dir import RunDir, summarize


def rec(task, it, feasible, lat=None, compiled=True, vs_eager=None):
    return {"attempt_id": f"r:{task}:{it}", "task": task, "iteration": it, "feasible": feasible,
            "latency_ms": lat, "compiled": compiled, "speedup_vs_eager": vs_eager}


def test_append_is_idempotent_and_survives_a_torn_line(tmp_path):
    rd = RunDir(tmp_path / "run", run_id="r")
    assert rd.append(rec("a", 0, False)) and not rd.append(rec("a", 0, False))
    with (tmp_path / "run" / "attempts.jsonl").open("a") as f:
        f.write('{"attempt_id": "r:a:1", "task"')  # a crash mid-write
    rd2 = RunDir(tmp_path / "run")
    assert [r["attempt_id"] for r in rd2.attempts()] == ["r:a:0"] and not rd2.has("r:a:1")
    assert rd2.append(rec("a", 1, True, 2.0))
    assert len((tmp_path / "run" / "attempts.jsonl").read_text().splitlines()) == 2


def test_a_directory_belongs_to_one_run(tmp_path):
    RunDir(tmp_path / "run", run_id="r1")
    assert RunDir(tmp_path / "run").run_id == "r1"
    with pytest.raises(ValueError, match="holds run 'r1'"):
        RunDir(tmp_path / "run", run_id="r2")


def test_summary_follows_the_papers_definitions(tmp_path):
    records = [rec("a", 0, False, compiled=False), rec("a", 1, True, 4.0, vs_eager=0.5), rec("a", 2, True, 1.0, vs_eager=2.0),
               rec("b", 0, False), rec("b", 1, False)]
    s = summarize(records, ["a", "b", "c"])
    a, b, c = s["tasks"]
    assert (a["first_feasible_iteration"], a["first_latency_ms"], a["best_latency_ms"]) == (1, 4.0, 1.0)
    assert a["speedup_vs_first"] == 4.0 and a["speedup_vs_eager"] == 2.0 and a["feasible_kernels"] == 2
    assert not b["feasible"] and b["speedup_vs_first"] is None and c["attempts"] == 0
    assert s["compile_rate"] == 4 / 5 and s["correctness"] == 1 / 3
    rd = RunDir(tmp_path / "run", run_id="r")
    for r in records:
        rd.append(r)
    written = rd.write_summary(["a", "b"])
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == written and written["run_id"] == "r"


def test_summary_carries_speedup_vs_compile_and_where_compile_failed():
    records = [rec("a", 0, True, 2.0, vs_eager=1.5) | {"speedup_vs_compile": 1.2},
               rec("b", 0, True, 1.0, vs_eager=3.0) | {"speedup_vs_compile": None, "compile_error": "it failed"},
               rec("c", 0, False)]
    s = summarize(records, ["a", "b", "c"])
    a, b, c = s["tasks"]
    assert a["speedup_vs_compile"] == 1.2 and a["compile_error"] is None
    assert b["speedup_vs_compile"] is None and b["compile_error"] == "it failed" and c["speedup_vs_compile"] is None
    assert s["geomean_speedup_vs_compile"] == 1.2 and s["compile_baseline_failed"] == {"b": "it failed"}
