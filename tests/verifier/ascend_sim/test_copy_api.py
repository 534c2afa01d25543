"""Data movement and fill forms community operators call (evk_sim/copy_api.h, issue 29), against numpy and the
documented semantics (asc-devkit docs, cited in the header); each fails without its implementation (the cases
file does not build without the API, and the numbers pin its semantics)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

SRC = Path(__file__).parent / "copy_cases.cpp"
RULES = marked_lines(SRC)


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("copy_api")
    return build_cases(sim, d, SRC, "copy api cases"), d


def ok(res):
    assert res.rc == 0, res.stderr
    assert res.rules("error") == set(), res.violations
    return res


def test_slice_copy_follows_the_documented_example(sim, prog):
    exe, d = prog
    x = np.arange(3 * 87, dtype=np.float32).reshape(3, 87)
    res = ok(sim.launch(exe, d, "slice_copy_f32", [x], [((2, 48), np.float32)]))
    # rows 0 and 2 (a gap of 1 row between slices); in each, 16..70 = 2 slices of 3 blocks (24 floats) 7 apart
    cols = np.concatenate([np.arange(16, 40), np.arange(47, 71)])
    np.testing.assert_array_equal(res.outputs[0], x[[0, 2]][:, cols])


@pytest.mark.parametrize("case", ["slice_copy_bad_span", "shift_f32", "copy_mask_half_lanes", "enhanced_matrix"])
def test_misuse_is_reported_at_its_line(sim, prog, case):
    exe, d = prog
    rule, line = RULES[case]
    ins = [np.zeros(3 * 87, np.float32)]
    res = sim.launch(exe, d, case, ins, [((2 * 48,), np.float32)])
    hits = res.find(rule)
    assert hits and any(h["line"] == line for h in hits), res.violations


def test_shifts_are_logical_for_unsigned_and_arithmetic_for_signed(sim, prog):
    exe, d = prog
    rng = np.random.default_rng(0)
    x = rng.integers(-32768, 32767, 128).astype(np.int16)
    res = ok(sim.launch(exe, d, "shift_i16", [x], [((256,), np.int16)]))
    low_byte = ((x.astype(np.int32) & 0xFF) ^ 0x80) - 0x80  # (x << 8) >> 8: the low byte, sign-extended
    np.testing.assert_array_equal(res.outputs[0][:128], low_byte.astype(np.int16))
    np.testing.assert_array_equal(res.outputs[0][128:], x >> 3)
    u = rng.integers(0, 65535, 128).astype(np.uint16)
    res = ok(sim.launch(exe, d, "shift_u16", [u], [((128,), np.uint16)]))
    np.testing.assert_array_equal(res.outputs[0], u >> 3)


def test_copy_mask_form_copies_every_active_lane(sim, prog):
    exe, d = prog
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    res = ok(sim.launch(exe, d, "copy_mask_f32", [x], [((128,), np.float32)]))
    np.testing.assert_array_equal(res.outputs[0], x)


def test_create_vec_index_and_the_tbuf_queue_interface(sim, prog):
    exe, d = prog
    res = ok(sim.launch(exe, d, "vec_index_i32", [np.zeros(8, np.float32)], [((64,), np.int32)]))
    np.testing.assert_array_equal(res.outputs[0], np.arange(5, 69, dtype=np.int32))
    res = ok(sim.launch(exe, d, "vec_index_f16", [np.zeros(8, np.float32)], [((128,), np.float16)]))
    np.testing.assert_array_equal(res.outputs[0], (np.arange(128) - 3).astype(np.float16))


def test_enhanced_params_normal_mode_and_cache_maintenance(sim, prog):
    exe, d = prog
    x = np.arange(64, dtype=np.float32)
    res = ok(sim.launch(exe, d, "enhanced_normal", [x], [((64,), np.float32)]))
    np.testing.assert_array_equal(res.outputs[0], x)


def test_workspace_functions_without_the_matmul_header(sim, prog):
    exe, d = prog
    res = ok(sim.launch(exe, d, "user_workspace", [np.zeros(8, np.float32)], [((8,), np.float32)]))
    assert res.outputs[0][0] in (1.0, 2.0)


def test_unqualified_abs_on_a_float_is_the_float_abs(sim, prog):
    exe, d = prog
    x = np.array([-0.5, 0.25, -3.75, 1e-13, -2, 0, 7.5, -0.001], np.float32)
    res = ok(sim.launch(exe, d, "scalar_abs_f32", [x], [((8,), np.float32)]))
    np.testing.assert_array_equal(res.outputs[0], np.abs(x))
