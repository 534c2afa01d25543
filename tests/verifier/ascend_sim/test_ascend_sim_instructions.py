"""Every emulated instruction against numpy, on edge sizes (1 element, lengths that are not a multiple of
32 bytes, several repeats) and in half precision, plus the mask/repeat forms, DataCopy/DataCopyPad forms,
atomics and scalar access. Correct kernels must also come out with no violation at all."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from ascend_sim_harness import build_cases

HERE = Path(__file__).resolve().parent
F32, F16, I32 = np.float32, np.float16, np.int32
rng = np.random.default_rng(1234)


def u(n, lo=-4.0, hi=4.0, dt=F32):
    return rng.uniform(lo, hi, n).astype(dt)


@dataclass
class Case:
    name: str
    inputs: Callable[[int], list]     # n -> input arrays
    expect: Callable[..., np.ndarray]  # inputs -> expected output
    out_dtype: type = F32
    sizes: tuple = (1, 203, 4099)
    prm: Callable[[int], list] = lambda n: [n]
    out_len: Callable[[int], int] = lambda n: n
    rtol: float = 0.0                  # 0: bit-exact
    atol: float = 0.0
    allowed: frozenset = frozenset()   # rules this case may (must, if in `required`) report
    required: frozenset = frozenset()
    block_dim: int = 1
    inout: bool = False


def bf16_rne(x):
    b = x.astype(F32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


def f16_toward_zero(x):
    with np.errstate(over="ignore"):
        h = x.astype(F16)
    too_far = np.abs(h.astype(np.float64)) > np.abs(x.astype(np.float64))
    h = np.where(too_far, np.nextafter(h, F16(0)), h)
    return np.where(np.isinf(h), np.copysign(F16(65504), x).astype(F16), h).astype(F16)


def f16_round_odd(x):
    t = f16_toward_zero(x)
    exact = t.astype(np.float64) == x.astype(np.float64)
    odd = (t.view(np.uint16) & 1) == 1
    away = np.nextafter(t, np.copysign(F16(np.inf), x).astype(F16))
    return np.where(exact | odd, t, away).astype(F16)


def round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def sat_i32(x):
    x = np.where(np.isnan(x), 0, x)
    return np.clip(x, -2147483648.0, 2147483647.0).astype(np.int64).astype(I32)


def cast_inputs(n):
    base = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.7, 1e-3, 123456.7, 3e9, -3e9, 0.0, -0.0], F32)
    return [np.resize(np.concatenate([base, u(max(n - base.size, 0), -100, 100)]), n).astype(F32)]


def lanes_expect(n, lanes, repeats, active, addr, fn, out_init=-7.0, dt=F32):
    """Reference for mask/repeat forms: replay the lane addressing; addr(op, r, l) -> element index."""
    def run(*ins):
        out = np.full(n, out_init, dtype=dt)
        for r in range(repeats):
            for l in range(lanes):
                if active(r, l):
                    out[addr("dst", r, l)] = fn(*[x[addr(f"src{k}", r, l)] for k, x in enumerate(ins)])
        return out
    return run


def strided(lpb, strides):
    """addr(op, r, l) for per-operand (block stride, repeat stride) in 32-byte blocks."""
    def addr(op, r, l):
        blk, rep = strides[op]
        return r * rep * lpb + (l // lpb) * blk * lpb + l % lpb
    return addr


MASK_N = {"add_mask_f32": 384, "add_bitmask_f32": 128, "mul_mask_f16": 256, "exp_mask_f16": 512,
          "muls_mask_f32": 128, "dup_mask_f32": 256}

CASES = [
    # binary, float and half (half: numpy's float16 arithmetic rounds once, like the NPU)
    Case("add_f32", lambda n: [u(n), u(n)], lambda a, b: a + b),
    Case("sub_f32", lambda n: [u(n), u(n)], lambda a, b: a - b),
    Case("mul_f32", lambda n: [u(n), u(n)], lambda a, b: a * b),
    Case("div_f32", lambda n: [u(n), u(n, 0.5, 4)], lambda a, b: a / b),
    Case("max_f32", lambda n: [u(n), u(n)], np.maximum),
    Case("min_f32", lambda n: [u(n), u(n)], np.minimum),
    Case("add_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)], lambda a, b: a + b, F16),
    Case("sub_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)], lambda a, b: a - b, F16),
    Case("mul_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)], lambda a, b: a * b, F16),
    Case("div_f16", lambda n: [u(n, dt=F16), u(n, 0.5, 4, F16)], lambda a, b: a / b, F16),
    Case("max_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)], np.maximum, F16),
    Case("min_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)], np.minimum, F16),
    Case("add_i32", lambda n: [rng.integers(-2**30, 2**30, n, dtype=I32), rng.integers(-2**30, 2**30, n, dtype=I32)],
         lambda a, b: a + b, I32),
    Case("mul_i32", lambda n: [rng.integers(-5000, 5000, n, dtype=I32), rng.integers(-5000, 5000, n, dtype=I32)],
         lambda a, b: a * b, I32),
    Case("add_i16", lambda n: [rng.integers(-20000, 20000, n, dtype=np.int16),
                               rng.integers(-20000, 20000, n, dtype=np.int16)],
         lambda a, b: (a.astype(np.int32) + b).astype(np.int16), np.int16),
    Case("and_u16", lambda n: [rng.integers(0, 65535, n, dtype=np.uint16), rng.integers(0, 65535, n, dtype=np.uint16)],
         np.bitwise_and, np.uint16),
    Case("or_u16", lambda n: [rng.integers(0, 65535, n, dtype=np.uint16), rng.integers(0, 65535, n, dtype=np.uint16)],
         np.bitwise_or, np.uint16),
    Case("addrelu_f32", lambda n: [u(n), u(n)], lambda a, b: np.maximum(a + b, 0)),
    Case("subrelu_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)], lambda a, b: np.maximum(a - b, F16(0)), F16),
    Case("muladddst_f32", lambda n: [u(n), u(n), u(n)], lambda a, b, c: a * b + c, rtol=1e-6, atol=1e-6),
    Case("fusedmuladd_f16", lambda n: [u(n, dt=F16), u(n, dt=F16), u(n, dt=F16)],
         lambda a, b, c: (a.astype(F32) * c.astype(F32) + b.astype(F32)).astype(F16), F16, rtol=1e-3, atol=2e-3),
    Case("axpy_f32", lambda n: [u(n), u(n)], lambda a, c: a * F32(2.5) + c, rtol=1e-6, atol=1e-6),
    # unary
    Case("exp_f32", lambda n: [u(n, -10, 10)], np.exp, rtol=2e-6),
    Case("ln_f32", lambda n: [u(n, 1e-3, 100)], np.log, rtol=2e-6, atol=1e-6),
    Case("abs_f32", lambda n: [u(n)], np.abs),
    Case("sqrt_f32", lambda n: [u(n, 0, 100)], np.sqrt),
    Case("relu_f32", lambda n: [u(n)], lambda a: np.maximum(a, 0)),
    Case("rsqrt_f32", lambda n: [u(n, 0.01, 100)], lambda a: 1 / np.sqrt(a), rtol=2.5e-4,
         allowed=frozenset({"low_precision"}), required=frozenset({"low_precision"})),
    Case("reciprocal_f32", lambda n: [u(n, 0.5, 100)], lambda a: 1 / a, rtol=2.5e-4,
         allowed=frozenset({"low_precision"}), required=frozenset({"low_precision"})),
    Case("exp_f16", lambda n: [u(n, -5, 5, F16)], np.exp, F16, rtol=1e-3),
    Case("ln_f16", lambda n: [u(n, 0.01, 100, F16)], np.log, F16, rtol=1e-3, atol=1e-3),
    Case("sqrt_f16", lambda n: [u(n, 0, 100, F16)], np.sqrt, F16),
    Case("abs_f16", lambda n: [u(n, dt=F16)], np.abs, F16),
    Case("relu_f16", lambda n: [u(n, dt=F16)], lambda a: np.maximum(a, F16(0)), F16),
    Case("not_u16", lambda n: [rng.integers(0, 65535, n, dtype=np.uint16)], np.invert, np.uint16),
    # tensor-scalar
    Case("adds_f32", lambda n: [u(n)], lambda a: a + F32(1.5)),
    Case("muls_f32", lambda n: [u(n)], lambda a: a * F32(-0.75)),
    Case("maxs_f32", lambda n: [u(n)], lambda a: np.maximum(a, F32(0.25))),
    Case("mins_f32", lambda n: [u(n)], lambda a: np.minimum(a, F32(0.25))),
    Case("leakyrelu_f32", lambda n: [u(n)], lambda a: np.where(a >= 0, a, a * F32(0.1))),
    Case("adds_f16", lambda n: [u(n, dt=F16)], lambda a: a + F16(1.5), F16),
    Case("muls_f16", lambda n: [u(n, dt=F16)], lambda a: a * F16(-0.75), F16),
    Case("adds_i32", lambda n: [rng.integers(-1000, 1000, n, dtype=I32)], lambda a: a + 7, I32),
    Case("dup_f32", lambda n: [u(n)], lambda a: np.full(a.shape, 3.25, F32)),
    Case("dup_f16", lambda n: [u(n, dt=F16)], lambda a: np.full(a.shape, -2.5, F16), F16),
    Case("dup_i32", lambda n: [rng.integers(0, 9, n, dtype=I32)], lambda a: np.full(a.shape, -17, I32), I32),
    # Cast with rounding modes
    Case("cast_f32_f16_rint", lambda n: [np.resize(np.concatenate(
        [np.array([1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 6e-8, 1e-8], F32), u(max(n - 5, 0), -60000, 60000)]),
        n).astype(F32)], lambda a: a.astype(F16), F16),
    Case("cast_f32_f16_trunc", lambda n: [np.resize(np.concatenate(
        [np.array([70000.0, -70000.0, 1 + 3 * 2**-11], F32), u(max(n - 3, 0), -1000, 1000)]), n).astype(F32)],
        f16_toward_zero, F16),
    Case("cast_f32_f16_odd", lambda n: [u(n, -1000, 1000)], f16_round_odd, F16),
    Case("cast_f16_f32", lambda n: [u(n, -1000, 1000, F16)], lambda a: a.astype(F32)),
    Case("cast_f32_i32_rint", cast_inputs, lambda a: sat_i32(np.rint(a.astype(np.float64))), I32),
    Case("cast_f32_i32_floor", cast_inputs, lambda a: sat_i32(np.floor(a.astype(np.float64))), I32),
    Case("cast_f32_i32_ceil", cast_inputs, lambda a: sat_i32(np.ceil(a.astype(np.float64))), I32),
    Case("cast_f32_i32_round", cast_inputs, lambda a: sat_i32(round_half_away(a.astype(np.float64))), I32),
    Case("cast_f32_i32_trunc", cast_inputs, lambda a: sat_i32(np.trunc(a.astype(np.float64))), I32),
    Case("cast_i32_f32", lambda n: [np.resize(np.concatenate([np.array([16777217, -16777219, 2**31 - 1], I32),
                                                             rng.integers(-2**31, 2**31 - 1, max(n - 3, 0), dtype=I32)]),
                                              n).astype(I32)], lambda a: a.astype(F32)),
    Case("cast_f32_f32_round", cast_inputs, lambda a: round_half_away(a.astype(np.float64)).astype(F32)),
    Case("cast_f32_bf16", lambda n: [u(n, -1e4, 1e4)], bf16_rne, np.uint16),
    Case("cast_bf16_f32", lambda n: [bf16_rne(u(n, -1e4, 1e4))],
         lambda b: (b.astype(np.uint32) << 16).view(F32)),
    Case("cast_f16_i8_trunc", lambda n: [u(n, -200, 200, F16)],
         lambda a: np.clip(np.trunc(a.astype(np.float64)), -128, 127).astype(np.int8), np.int8),
    Case("cast_u8_f16", lambda n: [rng.integers(0, 255, n, dtype=np.uint8)], lambda a: a.astype(F16), F16),
    # Compare / Select (the count covers whole 256-byte repeats)
    Case("cmpsel_f32", lambda n: [u(n), u(n)], lambda a, b: np.where(a < b, a, b), sizes=(64, 1024)),
    Case("cmpsel_scalar_f16", lambda n: [u(n, dt=F16)], lambda a: np.where(a > 0, a, F16(0)), F16, sizes=(128, 1024)),
    Case("cmp_bits_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)],
         lambda a, b: np.packbits(a >= b, bitorder="little"), np.uint8, sizes=(128, 512), out_len=lambda n: n // 8),
    # reductions (count form): [value, index bits]
    Case("reducesum_f32", lambda n: [u(n)], lambda a: np.array([a.astype(np.float64).sum(), 0], F32),
         sizes=(1, 64, 1000, 8191), out_len=lambda n: 2, rtol=1e-5, atol=1e-4),
    Case("reducemax_f32", lambda n: [u(n)], lambda a: np.array([a.max(), np.int32(a.argmax()).view(F32)], F32),
         sizes=(1, 777, 4096), out_len=lambda n: 2),
    Case("reducemin_f32", lambda n: [u(n)], lambda a: np.array([a.min(), np.int32(a.argmin()).view(F32)], F32),
         sizes=(3, 777), out_len=lambda n: 2),
    Case("reducesum_f16", lambda n: [u(n, 0, 1, F16)], lambda a: np.array([a.astype(np.float64).sum(), 0], F16),
         F16, sizes=(5, 3000), out_len=lambda n: 2, rtol=1e-2),
    Case("reducemax_f16", lambda n: [u(n, -100, 100, F16)],
         lambda a: np.array([a.max(), np.uint16(a.argmax()).view(F16)], F16), F16, sizes=(129, 2000),
         out_len=lambda n: 2),
    # repeat-form reductions
    Case("wholereducesum_f32", lambda n: [u(n * 64)],
         lambda a: a.reshape(-1, 64)[:, :37].astype(np.float64).sum(1).astype(F32), sizes=(5,),
         prm=lambda n: [n, 37], out_len=lambda n: n, rtol=1e-5, atol=1e-5),
    Case("wholereducemax_f16", lambda n: [u(n * 128, -100, 100, F16)],
         lambda a: np.stack([a.reshape(-1, 128).max(1),
                             a.reshape(-1, 128).argmax(1).astype(np.uint16).view(F16)], 1).reshape(-1), F16,
         sizes=(3,), out_len=lambda n: 2 * n),
    Case("wholereducemin_f32", lambda n: [u(n * 64)], lambda a: a.reshape(-1, 64)[:, ::2].min(1), sizes=(4,)),
    Case("blockreducesum_f32", lambda n: [u(n * 64)],
         lambda a: a.reshape(-1, 8).astype(np.float64).sum(1).astype(F32), sizes=(3,), out_len=lambda n: 8 * n,
         rtol=1e-6, atol=1e-6),
    Case("brcb_f32", lambda n: [u(n * 8)], lambda a: np.repeat(a, 8), sizes=(2,), out_len=lambda n: 64 * n),
    # mask/repeat forms (reference replays the lane addressing; untouched outputs keep -7)
    Case("add_mask_f32", lambda n: [u(n), u(n)],
         lanes_expect(384, 64, 3, lambda r, l: l < 40,
                      strided(8, {"dst": (1, 8), "src0": (1, 8), "src1": (2, 16)}), lambda a, b: a + b),
         sizes=(384,)),
    Case("add_bitmask_f32", lambda n: [u(n), u(n)],
         lanes_expect(128, 64, 2, lambda r, l: (0xF0F0F0F0F0F0F0F0 >> l) & 1,
                      strided(8, {"dst": (1, 8), "src0": (1, 8), "src1": (1, 8)}), lambda a, b: a + b),
         sizes=(128,)),
    Case("mul_mask_f16", lambda n: [u(n, dt=F16), u(n, dt=F16)],
         lanes_expect(256, 128, 2, lambda r, l: l >= 96,
                      strided(16, {"dst": (1, 8), "src0": (1, 8), "src1": (1, 8)}), lambda a, b: a * b, dt=F16),
         F16, sizes=(256,)),
    Case("add_counter_f32", lambda n: [u(n), u(n)],
         lambda a, b: np.concatenate([a[:-5] + b[:-5], np.full(5, -7, F32)]), sizes=(203, 64)),
    Case("exp_mask_f16", lambda n: [u(n, -3, 3, F16), u(n, dt=F16)],
         lanes_expect(512, 128, 2, lambda r, l: l < 64,
                      strided(16, {"dst": (1, 8), "src0": (2, 16), "src1": (2, 16)}),
                      lambda a, b: np.exp(np.float32(a)).astype(F16), dt=F16),
         F16, sizes=(512,), rtol=1e-3),
    Case("muls_mask_f32", lambda n: [u(n), u(n)], lambda a, b: a * F32(3), sizes=(128,)),
    Case("dup_mask_f32", lambda n: [u(n), u(n)],
         lambda a, b: lanes_expect(256, 64, 2, lambda r, l: l < 20, strided(8, {"dst": (2, 16)}), lambda: F32(9))(),
         sizes=(256,)),
    Case("cmp_mask_f32", lambda n: [u(n), u(n)], lambda a, b: np.packbits(a < b, bitorder="little"), np.uint8,
         sizes=(128,), out_len=lambda n: 16),
    Case("select_mask_f32", lambda n: [u(n), u(n)],
         lambda a, b: np.where(np.arange(128) % 64 < 48, np.where(a > b, a, b), F32(-7)), sizes=(128,)),
    Case("reducesum_mask_f32", lambda n: [u(n)],
         lambda a: np.array([a.reshape(3, 64)[:, :40].astype(np.float64).sum(), 0], F32), sizes=(192,),
         out_len=lambda n: 2, rtol=1e-5, atol=1e-5),
    Case("cast_mask_f16_f32", lambda n: [u(n, -100, 100, F16)], lambda a: a.astype(F32), sizes=(256,)),
    # data movement
    Case("datacopy_params_f32", lambda n: [u(n * 24)], lambda a: a.reshape(-1, 24)[:, :16].reshape(-1),
         sizes=(5,), out_len=lambda n: 16 * n),
    Case("datacopypad_pad_f32", lambda n: [u(n * 13)],
         lambda a: np.concatenate([a.reshape(-1, 13), np.full((a.size // 13, 3), -1, F32)], 1).reshape(-1),
         sizes=(4,), out_len=lambda n: 16 * n),
    Case("datacopypad_rows_f16", lambda n: [u(n * 13, dt=F16)],
         lambda a: np.concatenate([a.reshape(-1, 13), np.full((a.size // 13, 2), np.nan, F16)], 1).reshape(-1),
         F16, sizes=(6,), out_len=lambda n: 15 * n),
    Case("datacopy_ub_ub_f32", lambda n: [u(n)], lambda a: a, sizes=(96,)),
    Case("atomic_add_f32", lambda n: [u(n)], lambda a: a * F32(3), sizes=(64,), block_dim=3, inout=True),
    Case("scalar_access_f32", lambda n: [u(n)], lambda a: a[::-1] * F32(2), sizes=(1, 37)),
]


@pytest.fixture(scope="module")
def instr_prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("instr")
    return build_cases(sim, d, HERE / "instr_cases.cpp", f"instr_cases.cpp ({len(CASES)} instruction kernels, one program)"), d


def _params():
    for c in CASES:
        for n in c.sizes:
            yield pytest.param(c, n, id=f"{c.name}-{n}")


@pytest.mark.parametrize("case,n", list(_params()))
def test_instruction(case: Case, n: int, instr_prog, sim):
    exe, d = instr_prog
    ins = case.inputs(n)
    prm = np.array(case.prm(n), I32)
    out_len = case.out_len(n)
    if case.inout:
        res = sim.launch(exe, d / f"{case.name}-{n}", case.name, [prm, *ins], [], block_dim=case.block_dim,
                         inout=[np.zeros(out_len, case.out_dtype)])
        got = res.outputs["io0"]
    else:
        res = sim.launch(exe, d / f"{case.name}-{n}", case.name, [prm, *ins], [((out_len,), case.out_dtype)],
                         block_dim=case.block_dim)
        got = res.outputs[0]
    assert res.rc == 0, res.stderr
    assert res.report["status"] == "ok", res.violations
    unexpected = res.rules() - case.allowed
    assert not unexpected, res.violations
    assert case.required <= res.rules(), res.violations
    want = np.asarray(case.expect(*ins)).astype(case.out_dtype).reshape(-1)
    if case.rtol == 0 and case.atol == 0:
        if np.issubdtype(case.out_dtype, np.floating):
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}")[~np.isnan(want)],
                                          want.view(f"u{want.itemsize}")[~np.isnan(want)])
            assert np.isnan(got[np.isnan(want)]).all()
        else:
            np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol, atol=case.atol)


def test_counters_of_a_copy_kernel(instr_prog, sim):
    """The latency-model counters: bytes per MTE pipe, vector work by op and dtype, scalar accesses."""
    exe, d = instr_prog
    n = 37
    res = sim.launch(exe, d / "counters", "scalar_access_f32", [np.array([n], I32), u(n)], [((n,), F32)])
    tot = res.report["totals"]
    # the GM bytes the scalar accesses moved (the traffic check counts them): n float reads + the int32 n,
    # n float writes
    assert tot["scalar"] == {"gm_get": n + 1, "gm_set": n, "ub_get": n, "ub_set": n,
                             "gm_get_bytes": 4 * (n + 1), "gm_set_bytes": 4 * n, "libm": 0}
    assert tot["mte2_bytes"] == 0 and tot["mte3_bytes"] == 0
    res = sim.launch(exe, d / "counters2", "add_f32", [np.array([203], I32), u(203), u(203)], [((203,), F32)])
    tot = res.report["totals"]
    assert tot["mte2_bytes"] == 2 * 203 * 4 and tot["mte3_bytes"] == 203 * 4
    assert tot["vector"] == [{"op": "Add", "dtype": "float", "calls": 1, "elements": 203, "repeats": 4}]
    res = sim.launch(exe, d / "counters3", "cast_f16_f32", [np.array([300], I32), u(300, dt=F16)], [((300,), F32)])
    assert {"op": "Cast", "dtype": "half->float", "calls": 1, "elements": 300, "repeats": 5} in \
        res.report["totals"]["vector"]
    res = sim.launch(exe, d / "counters4", "add_mask_f32", [np.array([384], I32), u(384), u(384)], [((384,), F32)])
    add = [v for v in res.report["totals"]["vector"] if v["op"] == "Add"]
    assert add == [{"op": "Add", "dtype": "float", "calls": 1, "elements": 120, "repeats": 3}]


def test_half_overflow_saturation_option(instr_prog, sim):
    """Default: IEEE inf (910B Inf/NaN mode) and a half_overflow warning; option: saturate to 65504."""
    exe, d = instr_prog
    a = np.array([60000, 1, -60000, 2], F16)
    b = np.array([60000, 1, -60000, 2], F16)
    res = sim.launch(exe, d / "ovf", "add_f16", [np.array([4], I32), a, b], [((4,), F16)])
    assert list(res.outputs[0]) == [np.inf, 2, -np.inf, 4]
    assert [v["rule"] for v in res.violations] == ["half_overflow"] and res.violations[0]["severity"] == "warning"
    res = sim.launch(exe, d / "ovf2", "add_f16", [np.array([4], I32), a, b], [((4,), F16)],
                     options={"half_overflow": "saturate"})
    assert list(res.outputs[0]) == [65504, 2, -65504, 4]
