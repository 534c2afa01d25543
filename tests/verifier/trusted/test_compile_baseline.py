"""The torch.compile baseline: compiled once per task outside the timed rounds, its worker kept with the task's
reference across verdicts (each verdict's own weights), and a task torch.compile cannot build is timed
against eager alone with the reason in the verdict."""
from __future__ import annotations

from pathlib import Path

import pytest

from evokernel.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[3]
SIGMOID_TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "04_sigmoid.py"
SIGMOID = (ROOT / "evokernel" / "examples" / "cpu" / "04_sigmoid.py").read_text()
SMALL = {"batch_size": 8, "dim": 4096}


@pytest.fixture(scope="module")
def compiling(cache_dir):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("cpu", VerifyConfig(cache_dir=cache_dir, compile_baseline=True, min_rounds=5, max_rounds=6)).start()
    yield v
    v.close()


def compiled_worker(v, task):
    return v._pool._refs[(task.key, v.config.threads)].compiled_worker


def test_the_compiled_reference_is_built_once_and_reused_across_verdicts(compiling):
    task = load_task(SIGMOID_TASK, SMALL)
    first = compiling.verify(task, SIGMOID)
    assert first.feasible, first.feedback
    assert first.compile_baseline_ms > 0 and first.speedup_vs_compile > 0
    info = first.details["compile_baseline"]
    assert info["ok"] and info["reused"] is False and first.timings["compile_baseline"] > 0
    worker = compiled_worker(compiling, task)
    pid = worker.pid
    second = compiling.verify(task, SIGMOID)
    assert second.feasible and second.compile_baseline_ms > 0 and second.speedup_vs_compile > 0
    assert second.details["compile_baseline"] == {**second.details["compile_baseline"], "ok": True, "reused": True}
    assert compiled_worker(compiling, task) is worker and worker.pid == pid and worker.status is None


def test_a_task_torch_compile_cannot_build_is_timed_against_eager_and_says_why(compiling, tmp_path):
    # Inductor builds its generated C++ with this compiler: none there, so compiling fails (eager is unaffected)
    src = SIGMOID_TASK.read_text().replace(
        "import torch.nn as nn\n", "import torch.nn as nn\nimport torch._inductor.config as _ic\n"
        "_ic.cpp.cxx = ('/nonexistent/c++',)\n_ic.fx_graph_cache = False\n")
    path = tmp_path / "04_sigmoid_nocompile.py"
    path.write_text(src)
    task = load_task(path, SMALL)
    v = compiling.verify(task, SIGMOID)
    assert v.feasible, v.feedback
    assert v.speedup > 0 and v.compile_baseline_ms is None and v.speedup_vs_compile is None
    info = v.details["compile_baseline"]
    assert info["ok"] is False and "torch.compile of the reference failed" in info["error"]
    again = compiling.verify(task, SIGMOID)  # remembered: no second attempt
    assert again.feasible and again.details["compile_baseline"]["reused"] is True
    assert again.details["compile_baseline"]["error"] == info["error"]


def test_the_cli_says_when_there_is_no_speedup_vs_torch_compile(capsys):
    from evokernel.cli.app import _print_verdict
    from evokernel.verifier.verdict import Verdict

    why = "torch.compile of the reference failed: run: BackendCompilerFailed: no compiler\nmore lines"
    v = Verdict(feasible=True, failed_gate=None, feedback="ok", task="t", latency_ms=1.0, reference_ms=2.0, speedup=2.0,
                noise=0.01, speedup_ci=(1.9, 2.1),
                details={"compile_baseline": {"ok": False, "error": why}})
    _print_verdict(v, as_json=False)
    out = capsys.readouterr().out
    assert "no speedup vs torch.compile: torch.compile of the reference failed: run: BackendCompilerFailed" in out
    assert "more lines" not in out
    v.details = {"compile_baseline": {"ok": True, "reused": True}}
    _print_verdict(v, as_json=False)
    assert "no speedup vs torch.compile" not in capsys.readouterr().out
