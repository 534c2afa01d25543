"""SyncAll: the emulator runs blocks as fibers, so a cross-core barrier really waits for every block (hard
and soft forms), a barrier some blocks never reach is the hang it would be on the NPU, the blocks resume at
the slowest arrival. Ascend's own SyncAll samples (unaligned ReduceMin and Abs: a zeroed output, a barrier,
then atomic adds) run unchanged in tests/evals/test_ascend_launch_samples.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases

SRC = Path(__file__).parent / "sync_cases.cpp"


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("sync")
    return build_cases(sim, d, SRC, "sync cases"), d


def run(sim, prog, case, n=4, slow=0, **kw):
    exe, d = prog
    return sim.launch(exe, d, case, [np.array([slow], np.int32), np.zeros(n, np.float32),
                                     np.zeros(n * 8, np.int32)], [((n,), np.float32)], block_dim=n, **kw)


@pytest.mark.parametrize("case", ["sync_hard", "sync_soft", "sync_twice"])
def test_every_block_sees_every_other_blocks_phase_one(sim, prog, case):
    n = 6
    res = run(sim, prog, case, n)
    assert res.rc == 0, res.stderr
    assert res.rules("error") == set(), res.violations
    np.testing.assert_array_equal(res.outputs[0], np.full(n, n * (n + 1) / 2, np.float32))
    assert all(b["status"] == "ok" for b in res.report["blocks"])
    assert {b["counters"]["sync"]["sync_all"] for b in res.report["blocks"]} == {2 if case == "sync_twice" else 1}


def test_blocks_resume_at_the_slowest_arrival(sim, prog):
    fast = run(sim, prog, "sync_hard", 4, slow=0)
    slow = run(sim, prog, "sync_hard", 4, slow=200)
    cyc = lambda r, b: r.report["blocks"][b]["timing_estimate"]["cycles"]  # noqa: E731
    exp_cycles = slow.report["blocks"][0]["timing_estimate"]["busy_cycles"]["vector"]
    for b in (1, 2, 3):  # the fast blocks wait for block 0's 200 Exps
        assert cyc(slow, b) - cyc(fast, b) >= 0.9 * exp_cycles
    np.testing.assert_array_equal(slow.outputs[0], np.full(4, 10, np.float32))


def test_more_blocks_than_cores_cannot_meet(sim, prog):
    res = run(sim, prog, "sync_hard", 41)  # 40 vector cores: the 41st block never starts while 40 wait
    hits = res.find("sync_all")
    assert hits and hits[0]["severity"] == "fatal" and "hangs" in hits[0]["message"], res.violations
    assert res.report["status"] == "aborted" and {b["status"] for b in res.report["blocks"]} == {"aborted"}


def test_a_crash_while_others_wait_stops_the_run(sim, prog):
    res = run(sim, prog, "sync_crash_while_waiting", 3, timeout=30)
    assert res.rc == 10
    assert res.report["status"] == "crashed" and res.find("kernel_crash")
