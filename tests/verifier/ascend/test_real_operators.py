"""Real Ascend C operators, as Ascend's public samples write them, imported unchanged and judged on ascend-sim.

The samples are read in place from a mirror of their repository (evals/bench/ascend_samples.py; set
EVOKERNEL_ASCEND_SAMPLES to a clone elsewhere); nothing of them is copied into this repository. Without
a mirror these tests skip, and `python -m evokernel.evals.bench.ascend_samples --fetch` checks the same rows."""
import pytest

from evokernel.evals.bench.ascend_samples import SAMPLES, check, default_samples

MIRROR = default_samples()
needs_samples = pytest.mark.skipif(MIRROR is None, reason="no mirror of Ascend's samples here "
                                   "(EVOKERNEL_ASCEND_SAMPLES, or evals/bench/ascend_samples.py --fetch)")


@needs_samples
@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_a_published_operator_runs_unchanged_with_the_hardware_verdict(sample, ascend_verifier, tmp_path):
    row = check(sample, MIRROR, ascend_verifier, tmp_path)
    assert row["edits"] == 0  # json, tiling, host and kernel: what the verifier reads is the file as published
    assert row["verdict"] == sample.expect, row["feedback"]
    if sample.expect == "feasible":
        assert row["latency_us"] > 0
