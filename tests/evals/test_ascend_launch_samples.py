"""Ascend's kernel-launch samples compiled unchanged against ascend-sim (evals/bench/ascend_launch_samples.py): the raw
cube (Mmad with and without bias), GatherMask on unaligned rows, the two SyncAll samples (Fill, a barrier,
atomic adds into the neighbour's part), and the two whose host builds a matmul tiling (the Matmul API over
the cores its tiling picks; a bare MIX kernel whose vector cores rewrite the cube core's output in place),
both reading their tiling through a raw __gm__ pointer. Read in place from the samples mirror; skipped
without it."""
import shutil

import pytest

from evokernel.evals.bench.ascend_launch_samples import BY_NAME, LAUNCH_SAMPLES, check_launch
from evokernel.evals.bench.ascend_samples import default_samples

MIRROR = default_samples()
pytestmark = [pytest.mark.skipif(MIRROR is None, reason="no mirror of Ascend's samples here (EVOKERNEL_ASCEND_SAMPLES)"),
              pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")]

# what the emulator reports beyond a clean run: these samples' copies read past a block's declared GlobalTensor
# size (inside the buffer their main() allocates), a warning
WARNED = {"abs_gather_mask", "reduce_min", "abs_duplicate"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("launch-samples")


@pytest.mark.parametrize("name", [s.name for s in LAUNCH_SAMPLES])
def test_a_published_kernel_launch_sample_runs_unchanged_and_matches_numpy(workdir, name):
    row = check_launch(BY_NAME[name], MIRROR, workdir)
    assert row["rc"] == 0 and row["edits"] == 0
    assert row["match"], row["max_abs_error"]
    assert row["verdict"] == "passes", row["findings"]
    assert row["findings"] == ([("gm_out_of_bounds", "warning")] if name in WARNED else [])
    assert row["latency_us"] > 0
    blocks = row["report"]["blocks"]
    parts = 3 if row["cores"] > 0 else 1  # a MIX kernel's block is an AI core: one AIC and two AIVs
    assert len(blocks) == parts * row["block_dim"] and {b["status"] for b in blocks} == {"ok"}
    if name in ("matmul", "baremix"):  # the Matmul API makes them MIX kernels; the cube parts do the matmul
        assert row["cores"] == 2
        assert sum(b["counters"]["cube"]["mmad_calls"] for b in blocks) >= row["block_dim"]
    if name == "matmul":  # main() launches (usedCoreNum + 1) / 2 AI cores of its tiling
        assert row["block_dim"] > 1
    if name.startswith("mmad"):
        assert blocks[0]["kernel_type"] == "aic" and blocks[0]["counters"]["cube"]["mmad_calls"] == 1
    if name in ("reduce_min", "abs_duplicate"):
        assert all(b["counters"]["sync"]["sync_all"] == 1 for b in blocks)  # each block met the barrier once
