"""Each hardware rule is detected by a deliberately broken kernel, reported with the right rule id, severity
and kernel line; fatal violations stop the block (and only that block), the others let it go on."""
from __future__ import annotations

import shutil
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
         "r_invalid_tensor", "r_kernel_assert", "r_sync_all", "r_unsupported_api", "r_fatal_in_block0_only"} | {
             "r_gm_raw_read", "r_gm_raw_write", "r_gm_raw_memcpy"}
RAW_GM = {"r_gm_raw_read", "r_gm_raw_write", "r_gm_raw_memcpy"}  # fatal and the run stops (rc 10)
WARNING = {"r_gm_tensor_size", "r_half_overflow", "r_missing_sync", "r_set_without_wait", "r_input_written",
           "r_low_precision", "r_leak", "r_block_write_identical"}
OVERLAPS = {"r_block_write_overlap", "r_block_write_identical"}  # reported for block 1, the second writer
BLOCK_DIM = {"r_block_write_overlap": 2, "r_block_write_identical": 2, "r_fatal_in_block0_only": 2, "r_gm_raw_read": 2, "r_sync_all": 2}


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
            "input_written", "low_precision", "kernel_assert", "tiling_size", "unsupported_api",
            "gm_raw_access", "sync_all"} <= rules


@pytest.mark.parametrize("case", sorted(MARKS))
def test_rule_detected_at_kernel_line(case, sim, rule_prog):
    rule, line = MARKS[case]
    kw = {}
    if case == "r_half_overflow":
        kw = dict(a=np.full(64, 100, np.float16), out_dtype=np.float16)
    if case == "r_tiling_size":
        kw = dict(tiling=struct.pack("<I", 7))
    res = run_case(sim, rule_prog, case, **kw)
    # a raw GM access stops the run; so does a SyncAll some blocks never reach (the NPU would hang)
    assert res.rc == (10 if case in RAW_GM | {"r_sync_all"} else 0), res.stderr
    hits = [v for v in res.find(rule) if v["line"] == line and Path(v["file"]).name == SRC.name]
    assert hits, f"{rule} not reported at {SRC.name}:{line}: {res.violations}"
    v = hits[0]
    want = "fatal" if case in FATAL else "warning" if case in WARNING else "error"
    assert v["severity"] == want, v
    assert v["block"] == (1 if case in OVERLAPS else 0) and v["message"]
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
    assert "of them with other values" in v["message"] and not res.find("block_write_identical")


def test_lanes_computed_from_unwritten_bytes_are_an_error_only_where_used(sim, rule_prog):
    """Compare/Select/Add over 64 lanes of which 32 were loaded, then only the 32 copied out: no error (the NPU
    computes garbage in the other lanes, which reaches nothing); a reduction over all 64 is refused at its line
    and so is a copy-out of them (r_uninitialised_read)."""
    res = run_case(sim, rule_prog, "r_unwritten_lanes_unused")
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    x = np.arange(32, dtype=F32)
    np.testing.assert_array_equal(res.outputs[0][:32], x + (x > 0))  # Select: 0 where x <= 0, else 1; plus x
    res = run_case(sim, rule_prog, "r_unwritten_lanes_reduced")
    line = next(i for i, t in enumerate(SRC.read_text().splitlines(), 1) if "the unwritten lanes used: refused" in t)
    assert [v["line"] for v in res.find("uninitialised_read")] == [line], res.violations


def test_lanes_computed_from_unspecified_padding_are_warned_only_where_used(sim, rule_prog):
    """Muls/Adds over a 32-byte block of which 20 bytes were loaded by DataCopyPad (no padding value), then only
    the 20 copied out: nothing said (the padding lanes reach nothing); a reduction over all 8 lanes is warned at
    its line, not the Muls that first read the padding."""
    res = run_case(sim, rule_prog, "r_padded_lanes_unused")
    assert res.rc == 0 and not res.find("uninitialised_read"), res.violations
    np.testing.assert_array_equal(res.outputs[0][:5], np.arange(5, dtype=F32) * 2 + 1)
    res = run_case(sim, rule_prog, "r_padded_lanes_reduced")
    line = next(i for i, t in enumerate(SRC.read_text().splitlines(), 1) if "the padding lanes used: warned" in t)
    got = [(v["line"], v["severity"]) for v in res.find("uninitialised_read")]
    assert got == [(line, "warning")], res.violations


def test_blocks_writing_the_same_values_are_a_warning(sim, rule_prog):
    """Every block writes identical bytes to the same outputs (xsh20021105's Softmax and LogSumExp do): whichever
    write lands last, the output is the same, so it is duplicated work (a warning), not a wrong result."""
    res = run_case(sim, rule_prog, "r_block_write_identical")
    assert not res.find("block_write_overlap") and res.rules("error") == set(), res.violations
    v = res.find("block_write_identical")[0]
    assert v["severity"] == "warning" and "already wrote, with the same values" in v["message"]
    np.testing.assert_array_equal(res.outputs[0][:64], np.arange(64, dtype=F32))


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


def test_raw_gm_read_is_caught_and_stops_the_run(sim, rule_prog):
    """A kernel that reads its input with `((__gm__ float*)a)[i]` instead of DataCopy: the kernel-visible GM
    addresses are not dereferenceable, the fault is reported as gm_raw_access (what, where, what to use
    instead) and the run stops after block 0 (of 2)."""
    res = run_case(sim, rule_prog, "r_gm_raw_read")
    assert res.rc == 10 and res.report["status"] == "aborted"
    assert res.report["blocks_run"] == 1 and res.report["blocks"][0]["status"] == "aborted"
    assert res.rules("fatal") == {"gm_raw_access"}
    msg = res.find("gm_raw_access")[0]["message"]
    assert "read global memory through a raw pointer" in msg
    assert "byte 0 of input" in msg and "DataCopy" in msg and "GetValue/SetValue" in msg
    assert "r_gm_raw_read" in msg  # the kernel function, found with dladdr
    assert np.isnan(res.outputs[0]).all()  # nothing reached the output
    assert res.report["gm_protection"] == "unbacked-window"


def test_raw_gm_write_is_caught_after_legal_api_writes(sim, rule_prog):
    """SetGlobalBuffer((__gm__ float*)out + 8) and SetValue through it work; the raw write through
    GetPhyAddr() faults and is reported as a write; the legal write before it reaches the caller."""
    res = run_case(sim, rule_prog, "r_gm_raw_write")
    assert res.rc == 10 and res.rules("fatal") == {"gm_raw_access"}
    msg = res.find("gm_raw_access")[0]["message"]
    assert "wrote global memory" in msg and "byte 36 of output" in msg
    out = res.outputs[0]
    assert out[8] == 1.0 and np.isnan(out[9]) and np.isnan(out[:8]).all()


def test_the_tiling_may_be_read_through_a_raw_pointer_but_not_written(sim, rule_prog):
    """Ascend's kernel-launch samples copy the tiling word by word from its __gm__ pointer (the scalar unit reads
    GM): its pages are readable in the kernel's view. A raw write there still faults, as any raw access to the
    other arguments does (r_gm_raw_read)."""
    tiling = struct.pack("<IIfI", 7, 6, 0.5, 0)
    res = run_case(sim, rule_prog, "r_tiling_raw_read", tiling=tiling)
    assert res.rc == 0 and not res.rules(), res.violations
    assert res.outputs[0][0] == 3.0  # tiles * scale, read through the raw pointer
    res = run_case(sim, rule_prog, "r_tiling_raw_write", tiling=tiling)
    assert res.rc == 10 and res.rules("fatal") == {"gm_raw_access"}
    msg = res.find("gm_raw_access")[0]["message"]
    assert "wrote global memory" in msg and "byte 4 of tiling" in msg


def test_raw_gm_memcpy_in_libc_is_caught(sim, rule_prog):
    res = run_case(sim, rule_prog, "r_gm_raw_memcpy")
    assert res.rc == 10 and res.rules("fatal") == {"gm_raw_access"}
    assert "kernel_crash" not in res.rules()


def test_api_paths_see_the_data_the_caller_passed(sim, rule_prog):
    """Inputs are copied into the protected GM region and outputs back: a legal copy kernel round-trips."""
    a = np.random.default_rng(3).standard_normal(256).astype(F32)
    res = run_case(sim, rule_prog, "r_leak", a=a)
    np.testing.assert_array_equal(res.outputs[0][:64], a[:64])
    assert np.isnan(res.outputs[0][64:]).all()


def test_raw_gm_access_names_the_exact_line_with_line_tables(sim, tmp_path_factory):
    """Built with -g1 -gdwarf-4 (line tables only; binutils 2.40 misreads the file table of gcc 12's DWARF 5 for
    included sources), the faulting instruction maps to its kernel line (addr2line)."""
    if shutil.which("addr2line") is None:
        pytest.skip("binutils addr2line is not available")
    src = HERE / "raw_gm_cases.cpp"
    line = marked_lines(src, "LINE")["g_raw_read_line"][1]
    d = tmp_path_factory.mktemp("raw-gm-g1")
    exe = build_cases(sim, d, src, "raw_gm_cases.cpp (-g1 -gdwarf-4)", flags=["-g1", "-gdwarf-4"])
    res = sim.launch(exe, d, "g_raw_read_line", [np.arange(256, dtype=F32)], [((256,), F32)])
    v = res.find("gm_raw_access")
    assert res.rc == 10 and v, res.violations
    assert v[0]["line"] == line and Path(v[0]["file"]).name == src.name
    assert f"at kernel line {v[0]['file']}:{line}" in v[0]["message"]
