"""The shipped example kernels are feasible on their tasks, at default-like and overridden sizes."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "evokernel" / "examples" / "cpu"
# small but non-trivial sizes keep the suite fast; shape constants are read at run time by the kernels
SMALL = {
    "01_relu": {"batch_size": 8, "dim": 4096},
    "04_sigmoid": {"batch_size": 8},
    "06_elementwise_add": {"batch_size": 8},
    "08_sum_dim": {"batch_size": 4},
    "11_softmax": {"batch_size": 16},
    "13_layer_norm": {"batch_size": 4},
    "15_matmul": {},
    "22_cumsum": {"batch_size": 8},
    "01_gemm_bias_relu": {"batch_size": 16},
}


def _task_for(example: Path) -> tuple[str, str]:
    stem = example.stem
    if stem.startswith("l2_"):
        return "cpu_l2", stem[3:]
    return "cpu_l1", stem.removesuffix("_load_inline")


CASES = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("example", CASES, ids=[p.stem for p in CASES])
def test_example_is_feasible(verifier, suite_task, example):
    suite, name = _task_for(example)
    path = f"{suite}/{name}.py"
    overrides = {k: v for k, v in SMALL.get(name, {}).items()}
    task = suite_task(path, **{k: v for k, v in overrides.items() if k in suite_task(path).constants})
    verdict = verifier.verify(task, example.read_text())
    assert verdict.feasible, verdict.feedback


def test_timing_fields(cache_dir, suite_task):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    with Verifier("cpu", VerifyConfig(cache_dir=cache_dir, min_rounds=5, max_rounds=8)) as v:
        verdict = v.verify(suite_task("cpu_l1/15_matmul.py"), (EXAMPLES / "15_matmul.py").read_text())
    assert verdict.feasible, verdict.feedback
    assert verdict.latency_ms > 0 and verdict.reference_ms > 0
    assert verdict.speedup_ci[0] <= verdict.speedup <= verdict.speedup_ci[1]
    assert 5 <= verdict.details["timing"]["rounds"] <= 8
    for stage in ("correctness_trials", "timed_calls", "total", "overhead"):
        assert stage in verdict.timings
    # the roofline profile (no hardware counters here): a matmul is compute-bound, and refining reads it
    from evokernel.nodes.update import bottleneck, profile_text

    diag = verdict.details["diagnosis"]
    assert diag["bound"] == "compute" and diag["kind"] == "roofline estimate" and diag["compute_ms"] > diag["mem_ms"]
    assert "profile (roofline estimate):" in verdict.feedback and "bound: compute" in verdict.feedback
    as_dict = verdict.to_json()  # as the verify node hands it to update
    assert bottleneck(as_dict) == "compute" and "compute roof" in profile_text(as_dict)


def test_compile_baseline(cache_dir, suite_task):
    """torch.compile of the reference is timed in the same rounds (cold inductor compile here)."""
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    with Verifier("cpu", VerifyConfig(cache_dir=cache_dir, compile_baseline=True, min_rounds=5, max_rounds=6)) as v:
        verdict = v.verify(suite_task("cpu_l1/04_sigmoid.py", batch_size=8), (EXAMPLES / "04_sigmoid.py").read_text())
    assert verdict.feasible, verdict.feedback
    assert verdict.compile_baseline_ms > 0 and verdict.speedup_vs_compile > 0
