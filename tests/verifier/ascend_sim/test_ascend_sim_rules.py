"""Each hardware rule is detected by a deliberately broken kernel, reported with the right rule id, severity
and kernel line; fatal violations stop the block (and only that block), the others let it go on."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

HERE = Path(__file__).resolve().parent
SRC = HERE / "rule_cases.cpp"
MARKS = marked_lines(SRC)
F32 = np.float32

FATAL = {"r_ub_capacity", "r_deque_empty", "r_alloc_beyond_num", "r_gm_oob_write", "r_wait_without_set",
         "r_invalid_tensor", "r_kernel_assert", "r_sync_all", "r_fatal_in_block0_only"}
WARNING = {"r_gm_tensor_size", "r_half_overflow", "r_missing_sync", "r_set_without_wait", "r_input_written",
           "r_low_precision", "r_leak"}
BLOCK_DIM = {"r_block_write_overlap": 2, "r_fatal_in_block0_only": 2}


@pytest.fixture(scope="module")
def rule_prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("rules")
    return build_cases(sim, d, SRC, f"rule_cases.cpp ({len(MARKS) + 1} broken kernels, one program)"), d


def run_case(sim, rule_prog, case, a=None, out_dtype=F32, tiling=None):
    exe, d = rule_prog
    a = np.arange(256, dtype=F32) if a is None else a
    return sim.launch(exe, d, case, [a], [((a.size,), out_dtype)], block_dim=BLOCK_DIM.get(case, 1), tiling=tiling)


def test_every_rule_has_a_case():
    rules = {rule for rule, _ in MARKS.values()}
    assert {"ub_alignment", "datacopy_tail_dropped", "ub_capacity", "ub_out_of_bounds", "queue_limits", "queue_pairing",
            "use_after_free", "uninitialised_read", "gm_out_of_bounds", "block_write_overlap", "compare_granularity",
            "half_overflow", "missing_sync", "sync_pairing", "invalid_tensor", "unsupported_dtype", "invalid_argument",
            "input_written", "low_precision", "kernel_assert", "tiling_size", "unsupported_api"} <= rules


@pytest.mark.parametrize("case", sorted(MARKS))
def test_rule_detected_at_kernel_line(case, sim, rule_prog):
    rule, line = MARKS[case]
    kw = {}
    if case == "r_half_overflow":
        kw = dict(a=np.full(64, 100, np.float16), out_dtype=np.float16)
    if case == "r_tiling_size":
        kw = dict(tiling=struct.pack("<I", 7))
    res = run_case(sim, rule_prog, case, **kw)
    assert res.rc == 0, res.stderr
    hits = [v for v in res.find(rule) if v["line"] == line and Path(v["file"]).name == SRC.name]
    assert hits, f"{rule} not reported at {SRC.name}:{line}: {res.violations}"
    v = hits[0]
    want = "fatal" if case in FATAL else "warning" if case in WARNING else "error"
    assert v["severity"] == want, v
    assert v["block"] == (1 if case == "r_block_write_overlap" else 0) and v["message"]
    statuses = [b["status"] for b in res.report["blocks"]]
    if case in FATAL:
        assert res.report["status"] == "aborted" and statuses[0] == "aborted"
    else:
        assert res.report["status"] == "ok" and set(statuses) == {"ok"}


def test_tail_drop_is_reproduced(sim, rule_prog):
    """DataCopy of 203 floats moves 200: the tail is never written, and reading it back is flagged."""
    a = np.arange(256, dtype=F32) + 1
    res = run_case(sim, rule_prog, "r_tail_dropped", a=a)
    out = res.outputs[0]
    np.testing.assert_array_equal(out[:200], a[:200])
    assert np.isnan(out[200:203]).all()
    assert {"datacopy_tail_dropped", "uninitialised_read"} <= res.rules()
    assert "drops the last 3 element" in res.find("datacopy_tail_dropped")[0]["message"]


def test_fatal_stops_the_block_only(sim, rule_prog):
    res = run_case(sim, rule_prog, "r_fatal_in_block0_only")
    assert [b["status"] for b in res.report["blocks"]] == ["aborted", "ok"]
    out = res.outputs[0]
    assert np.isnan(out[:128]).all()  # block 0 stopped before its own write
    np.testing.assert_array_equal(out[128:], 5.0)


def test_fatal_oob_write_touches_nothing(sim, rule_prog):
    res = run_case(sim, rule_prog, "r_gm_oob_write")
    assert np.isnan(res.outputs[0]).all()  # neither the partial copy nor the following SetValue happened
    assert "past the end" in res.find("gm_out_of_bounds")[0]["message"]


def test_overlap_names_both_blocks(sim, rule_prog):
    res = run_case(sim, rule_prog, "r_block_write_overlap")
    v = res.find("block_write_overlap")[0]
    assert v["block"] == 1 and "already written by block 0" in v["message"]


def test_crash_is_contained_and_reported(sim, rule_prog):
    res = run_case(sim, rule_prog, "r_crash")
    assert res.rc == 10
    assert res.report["status"] == "crashed"
    assert res.find("kernel_crash") and "SIGSEGV" in res.find("kernel_crash")[0]["message"]


def test_clean_kernel_in_the_same_program_has_no_violations(sim, rule_prog):
    """The leak case frees nothing; everything else it does is legal: only the leak is reported."""
    res = run_case(sim, rule_prog, "r_leak")
    assert res.rules() == {"queue_pairing"}
    np.testing.assert_array_equal(res.outputs[0][:64], np.arange(64, dtype=F32))


def test_instruction_budget_stops_an_endless_loop(sim, rule_prog):
    exe, d = rule_prog
    res = sim.launch(exe, d, "r_endless_loop", [np.zeros(256, F32)], [((256,), F32)],
                     options={"max_instructions": 5000})
    assert res.report["status"] == "aborted"
    assert "instruction_budget" in res.rules("fatal")


def test_partial_oob_read_keeps_the_in_bounds_part(sim, rule_prog):
    """DataCopy of 64 floats from element 224 of a 256-float input: 32 real values, 32 out of bounds."""
    a = np.arange(256, dtype=F32)
    res = run_case(sim, rule_prog, "r_gm_oob_read", a=a)
    out = res.outputs[0]
    np.testing.assert_array_equal(out[:32], a[224:])
    assert np.isnan(out[32:64]).all()  # never written in UB, then copied out (flagged as uninitialised)
    assert {"gm_out_of_bounds", "uninitialised_read"} <= res.rules("error")
