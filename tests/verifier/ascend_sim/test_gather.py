"""Gather, Scatter, GatherMask and Transpose on the emulator, against numpy (the documented semantics: byte
offsets relative to a base, GatherMask's built-in patterns 1-7 and tensor patterns, its normal and counter
modes and rsvdCnt) and the misuse each check exists for. Ascend's unaligned-abs sample that relies on
GatherMask runs unchanged in tests/evals/test_ascend_launch_samples.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

SRC = Path(__file__).parent / "gather_cases.cpp"
RULES = marked_lines(SRC)


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("gather")
    return build_cases(sim, d, SRC, "gather cases"), d


def ok(res):
    assert res.rc == 0, res.stderr
    assert res.rules("error") == set(), res.violations
    return res


@pytest.mark.parametrize("case,dt", [("gather_f32", np.float32), ("gather_f16", np.float16)])
def test_gather_by_byte_offsets_from_a_base(sim, prog, case, dt):
    exe, d = prog
    rng = np.random.default_rng(1)
    n, count, base_el = 300, 200, 8
    x = rng.standard_normal(n).astype(dt)
    idx = rng.integers(0, n - base_el, count)  # element indices relative to the base, repeats allowed
    off = (idx * x.itemsize).astype(np.uint32)
    res = ok(sim.launch(exe, d, case, [np.array([n, count, base_el * x.itemsize], np.int32), x, off],
                        [((count,), dt)]))
    np.testing.assert_array_equal(res.outputs[0], x[base_el + idx])


def test_scatter_writes_each_element_at_its_offset(sim, prog):
    exe, d = prog
    rng = np.random.default_rng(2)
    n, count, base_el = 256, 100, 16
    x = rng.standard_normal(count).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    idx = rng.permutation(n - base_el)[:count]  # distinct destinations (the API leaves duplicates undefined)
    res = ok(sim.launch(exe, d, "scatter_f32", [np.array([n, count, base_el * 4], np.int32), x,
                                                (idx * 4).astype(np.uint32), y], [((n,), np.float32)]))
    want = y.copy()
    want[base_el + idx] = x
    np.testing.assert_array_equal(res.outputs[0], want)


PATTERNS = {1: lambda l: l % 2 == 0, 2: lambda l: l % 2 == 1, 3: lambda l: l % 4 == 0, 4: lambda l: l % 4 == 1,
            5: lambda l: l % 4 == 2, 6: lambda l: l % 4 == 3, 7: lambda l: True}


@pytest.mark.parametrize("builtin", sorted(PATTERNS))
@pytest.mark.parametrize("case,dt", [("gmask_f32", np.float32), ("gmask_f16", np.float16)])
def test_gathermask_builtin_patterns_normal_mode(sim, prog, case, dt, builtin):
    """Normal mode: each repeat covers 256 bytes and the pattern restarts in it; selected elements pack."""
    exe, d = prog
    lanes, reps = 256 // np.dtype(dt).itemsize, 2
    n = lanes * reps
    x = np.arange(n).astype(dt)
    pat = np.zeros(256 // (4 if dt == np.float32 else 2), np.uint32 if dt == np.float32 else np.uint16)
    res = ok(sim.launch(exe, d, case, [np.array([n, builtin, 0, 0, reps], np.int32), x, pat],
                        [((n,), dt), ((1,), np.int32)]))
    sel = np.array([r * lanes + l for r in range(reps) for l in range(lanes) if PATTERNS[builtin](l)])
    assert res.outputs[1][0] == len(sel)
    np.testing.assert_array_equal(res.outputs[0][:len(sel)], x[sel])


def test_gathermask_tensor_pattern_counter_mode_like_the_unaligned_abs_sample(sim, prog):
    """Counter mode (reduceMode) with mask 32 over half: bits 2-17 of the pattern pick the 16-element tail of
    an 18-element row, as Ascend's unaligned-abs sample does."""
    exe, d = prog
    x = np.arange(64).astype(np.float16)
    pat = np.zeros(128, np.uint16)
    pat[0], pat[1] = 0b1111111111111100, 0b11
    res = ok(sim.launch(exe, d, "gmask_f16", [np.array([64, 0, 1, 32, 1], np.int32), x, pat],
                        [((64,), np.float16), ((1,), np.int32)]))
    assert res.outputs[1][0] == 16
    np.testing.assert_array_equal(res.outputs[0][:16], x[2:18])


def test_transpose_16x16(sim, prog):
    exe, d = prog
    x = np.arange(256).astype(np.float16).reshape(16, 16)
    res = ok(sim.launch(exe, d, "transpose_f16", [np.zeros(4, np.int32), x], [((16, 16), np.float16)]))
    np.testing.assert_array_equal(res.outputs[0], x.T)


@pytest.mark.parametrize("case", sorted(RULES))
def test_gather_misuse_is_reported_at_its_line(sim, prog, case):
    exe, d = prog
    rule, line = RULES[case]
    res = sim.launch(exe, d, case, [np.zeros(4, np.int32), np.zeros(64, np.float32), np.zeros(8, np.uint32)],
                     [((8,), np.float32)])
    hits = [v for v in res.find(rule) if v["line"] == line and Path(v["file"]).name == SRC.name]
    assert hits, f"{rule} not reported at {SRC.name}:{line}: {res.violations}"
