"""The high-level last-axis reductions Sum and Mean (evk_sim/reduce_api.h) against numpy: rows padded to 32
bytes, tails, several repeats per row, half and float, Mean with a wider accType; the documented summation
order (pairwise per repeat, then over partials) reproduced bit for bit in half; and params the documentation
says give a wrong result (inner not n rounded up to 32 bytes) refused at the line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

SRC = Path(__file__).parent / "reduce_cases.cpp"
RULES = marked_lines(SRC)


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("reduce-api")
    return build_cases(sim, d, SRC, "reduce api cases"), d


def rows(dt, outter, n, seed):
    per = 32 // np.dtype(dt).itemsize
    inner = -(-n // per) * per
    x = np.zeros((outter, inner), dt)
    x[:, :n] = np.random.default_rng(seed).uniform(-2, 2, (outter, n)).astype(dt)
    x[:, n:] = np.nan  # padding the API must not read
    return x, inner


def pairwise(v, dt, lanes):
    """The documented order: pairwise within 256-byte repeats, then pairwise over the partials (rounded to dt)."""
    def tree(a):
        a = list(a)
        while len(a) > 1:
            if len(a) % 2:
                a.append(dt(0))
            a = [dt(a[i] + a[i + 1]) for i in range(0, len(a), 2)]
        return a[0]
    parts = [tree(np.concatenate([v[i:i + lanes], np.zeros(max(0, lanes - len(v[i:i + lanes])), dt)]))
             for i in range(0, len(v), lanes)]
    while len(parts) > 1:
        parts = [tree(parts[i:i + lanes]) for i in range(0, len(parts), lanes)]
    return parts[0]


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("outter,n", [(1, 5), (3, 64), (4, 1000), (2, 70000 // 64)])
@pytest.mark.parametrize("form", [0, 1, 2, 3])
def test_rows_against_numpy(sim, prog, dt, outter, n, form):
    exe, d = prog
    x, inner = rows(dt, outter, n, seed=outter * n + form)
    case = "rows_f32" if dt == np.float32 else "rows_f16"
    res = sim.launch(exe, d, case, [np.array([outter, inner, n, form], np.int32), x], [((outter,), dt)])
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    want = x[:, :n].astype(np.float64).sum(axis=1) / (n if form >= 2 else 1)
    # float: float rounding; half summed in float (accType): one rounding to half; half sums: half rounding
    tol = 1e-5 if dt == np.float32 else 1e-3 if form == 3 else 5e-3 * max(1.0, np.sqrt(n) / 8)
    np.testing.assert_allclose(res.outputs[0].astype(np.float64), want, rtol=tol, atol=tol)
    if dt == np.float16 and form in (0, 1):  # the documented order, reproduced in half
        lanes = 128
        exact = np.array([pairwise(x[r, :n], np.float16, lanes) for r in range(outter)], np.float16)
        np.testing.assert_array_equal(res.outputs[0], exact)


def test_inner_not_rounded_up_to_32_bytes_is_refused(sim, prog):
    exe, d = prog
    res = sim.launch(exe, d, "rows_bad_inner", [np.zeros(4, np.int32), np.zeros(8, np.float32)], [((2,), np.float32)])
    rule, line = RULES["rows_bad_inner"]
    hits = [v for v in res.find(rule) if v["line"] == line]
    assert hits and "32 bytes" in hits[0]["message"], res.violations
