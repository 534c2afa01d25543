"""MIX kernels: per launched block one cube core (AIC) and two vector cores (AIV) run the kernel, each on its
own fiber; ASCEND_IS_AIC/AIV, GetBlockIdx/GetSubBlockIdx/GetTaskRation as documented for 1:2; cross-core
flags in modes 1 and 2 hand data from the cube to the vector cores and back; a wait nobody answers is the
hang it would be on the NPU."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

SRC = Path(__file__).parent / "mix_cases.cpp"
MIX = {"mix": 2}


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("mix")
    return build_cases(sim, d, SRC, "mix cases"), d


def test_each_core_knows_who_it_is(sim, prog):
    exe, d = prog
    n = 3
    res = sim.launch(exe, d, "mix_identity", [], [((n * 9,), np.int32)], block_dim=n, options=MIX)
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    ids = res.outputs[0].reshape(n, 3, 3)
    for b in range(n):
        assert list(ids[b, 0]) == [b, 0, 1]                      # AIC: block index, no sub-block, ratio 1
        assert list(ids[b, 1]) == [2 * b, 0, 2] and list(ids[b, 2]) == [2 * b + 1, 1, 2]  # AIVs
    cores = [(blk["core"], blk["ai_core"], blk["sub_block"]) for blk in res.report["blocks"]]
    assert cores == [(c, b, s) for b in range(n) for c, s in (("aic", 0), ("aiv", 0), ("aiv", 1))]


def test_cube_tile_then_vector_epilogue(sim, prog):
    exe, d = prog
    n = 4
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (n * 32, 32)).astype(np.float16)
    b = rng.uniform(-1, 1, (32, 32)).astype(np.float16)
    res = sim.launch(exe, d, "mix_mm_leaky", [a, b], [((n * 1024,), np.float32), ((n * 32, 32), np.float32),
                                                     ((n,), np.int32)], block_dim=n, options=MIX)
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    c = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(res.outputs[1], np.where(c > 0, c, 0.1 * c), rtol=1e-5, atol=1e-5)
    assert list(res.outputs[2]) == [1] * n
    # the AIVs start their copies only after the AIC's Fixpipe: their schedules are longer than a lone copy
    blocks = res.report["blocks"]
    aic = [blk for blk in blocks if blk["core"] == "aic"][0]["timing_estimate"]
    aiv = [blk for blk in blocks if blk["core"] == "aiv"][0]["timing_estimate"]
    assert aiv["cycles"] > aic["busy_cycles"]["cube"] + aic["busy_cycles"]["fix"]


def test_mode1_pairs_the_two_vector_cores(sim, prog):
    exe, d = prog
    n = 2
    res = sim.launch(exe, d, "mix_aiv_pair", [], [((n * 2,), np.float32), ((n * 2,), np.float32)], block_dim=n,
                     options=MIX)
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    np.testing.assert_array_equal(res.outputs[1], [20.0, 10.0, 40.0, 30.0])


def test_a_wait_nobody_answers_hangs(sim, prog):
    exe, d = prog
    rule, line = marked_lines(SRC)["mix_wait_forever"]
    res = sim.launch(exe, d, "mix_wait_forever", [], [((4,), np.float32)], block_dim=1, options=MIX)
    assert res.rc == 10
    hits = [v for v in res.find(rule) if v["line"] == line]
    assert hits and hits[0]["severity"] == "fatal" and "CrossCoreWaitFlag(3)" in hits[0]["message"], res.violations


def test_a_mix_kernel_launched_as_vector_only_hangs_and_says_why(sim, prog):
    exe, d = prog
    a = np.zeros((32, 32), np.float16)
    res = sim.launch(exe, d, "mix_mm_leaky", [a, a], [((1024,), np.float32), ((32, 32), np.float32),
                                                     ((1,), np.int32)], block_dim=1)
    assert res.rc == 10
    hit = res.find("sync_all")[0]
    assert "no cube cores" in hit["message"] and "EVK_SIM_MIX" in hit["message"]


def test_the_estimate_counts_ai_cores_not_their_parts(sim, prog):
    """A MIX block is an AI core: its cube and vector cores run side by side (the estimate takes the longest of
    the three), and the blocks are dispatched over the 20 AI cores."""
    from evokernel.verifier.backends.ascend_sim.latency_model import estimate_kernel

    exe, d = prog
    n = 4
    a = np.zeros((n * 32, 32), np.float16)
    res = sim.launch(exe, d, "mix_mm_leaky", [a, a[:32]], [((n * 1024,), np.float32), ((n * 32, 32), np.float32),
                                                          ((n,), np.int32)], block_dim=n, options=MIX)
    est = estimate_kernel(res.report)
    assert est.block_dim == n and est.cores == 20 and est.cores_used == n and est.core_kind.startswith("AI (MIX")
    longest = max(b["timing_estimate"]["cycles"] for b in res.report["blocks"])
    assert est.core_us == pytest.approx(longest / 1.8e9 * 1e6)


def test_the_build_tells_a_mix_kernel_from_the_code():
    from evokernel.verifier.backends.ascend_sim.build import kernel_cores

    cube = "Mmad(c, a, b, p); TQue<TPosition::A1, 1> q;"
    assert kernel_cores("Add(z, x, y, n); TQue<QuePosition::VECIN, 2> q;") == 0
    assert kernel_cores(cube) == -1                                     # cube only
    assert kernel_cores(cube + " TQue<TPosition::VECOUT, 1> o;") == 2   # cube and vector code: MIX 1:2
    assert kernel_cores(cube + " if ASCEND_IS_AIV { }") == 2
    assert kernel_cores("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1); " + cube) == 1
    assert kernel_cores("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);") == -1


def test_one_ai_core_may_rewrite_its_own_output_other_cores_may_not(sim, prog):
    """A matmul's C rewritten in place by its epilogue (Ascend's 22_baremix sample): the AIC and the AIVs of one
    AI core write the same bytes one after the other, ordered by a cross-core flag. Two AIVs of one core writing
    the same bytes, or two AI cores, are still block_write_overlap."""
    exe, d = prog
    n = 2
    res = sim.launch(exe, d, "mix_write_owner", [np.array([0], np.int32)], [((n * 8,), np.float32)], block_dim=n,
                     options=MIX)
    assert res.rc == 0 and "block_write_overlap" not in res.rules(), res.violations
    np.testing.assert_array_equal(res.outputs[0], np.full(n * 8, 2.0, np.float32))
    res = sim.launch(exe, d, "mix_write_owner", [np.array([1], np.int32)], [((n * 8,), np.float32)], block_dim=n,
                     options=MIX)
    msg = res.find("block_write_overlap")[0]["message"]
    assert "AIV 1 of AI core 0 (block 1)" in msg and "AIV 0 of AI core 0 (block 0)" in msg
    res = sim.launch(exe, d, "mix_write_owner", [np.array([2], np.int32)], [((n * 8,), np.float32)], block_dim=n,
                     options=MIX)
    msg = res.find("block_write_overlap")[0]["message"]
    assert "AIV 0 of AI core 1 (block 2)" in msg and "AIV 0 of AI core 0 (block 0)" in msg


def test_an_init_shared_by_both_core_types_is_an_error_only_where_used(sim, prog):
    """Every core of a MIX kernel runs one Init that initialises a VECOUT queue (CANN's InitBuffer only books
    addresses; CANN's Matmul-LeakyRelu samples do it): nothing said on the AIC; its use there (AllocTensor) is the
    error."""
    exe, d = prog
    res = sim.launch(exe, d, "mix_shared_init", [], [((128,), np.float32)], block_dim=1, options=MIX)
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    assert res.find("tensor_position") == [], res.violations
    np.testing.assert_array_equal(res.outputs[0], np.ones(128, np.float32))
    res = sim.launch(exe, d, "mix_shared_init_used", [], [((128,), np.float32)], block_dim=1, options=MIX)
    errors = [v for v in res.find("tensor_position") if v["severity"] == "error"]
    assert errors and "AllocTensor" in errors[0]["message"] and "cube core" in errors[0]["message"], res.violations
