"""The high-level math and activation APIs (evk_sim/math_api.h: Sigmoid, Tanh, Erf, Sin, Cos, Log, Log2, Log10,
Sign, Floor, Ceil, Trunc, ClampMax, ClampMin, Silu, Swish, Gelu, FasterGelu, Power) against numpy in float and
half, each documented form; each call counted as the basic instructions of its composition; and the misuse the
documentation rules out (source and destination overlapping, an integer type)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

SRC = Path(__file__).parent / "math_cases.cpp"
RULES = marked_lines(SRC)

_erf = np.vectorize(math.erf)
# api number (math_cases.cpp) -> (name, numpy formula of x (and y), input range, forms it has)
APIS = {
    0: ("Sigmoid", lambda x, y: 1 / (1 + np.exp(-x)), (-8, 8), (0, 1, 2)),
    1: ("Tanh", lambda x, y: np.tanh(x), (-4, 4), (0, 1, 2)),
    2: ("Erf", lambda x, y: _erf(x), (-3, 3), (0, 1, 2)),
    3: ("Sin", lambda x, y: np.sin(x), (-6, 6), (0, 1, 2)),
    4: ("Cos", lambda x, y: np.cos(x), (-6, 6), (0, 1, 2)),
    5: ("Log", lambda x, y: np.log(x), (0.01, 50), (0,)),
    6: ("Log2", lambda x, y: np.log2(x), (0.01, 50), (0, 1, 2)),
    7: ("Log10", lambda x, y: np.log10(x), (0.01, 50), (0, 1, 2)),
    8: ("Sign", lambda x, y: np.sign(x), (-2, 2), (0, 1, 2)),
    9: ("Floor", lambda x, y: np.floor(x), (-5, 5), (0,)),
    10: ("Ceil", lambda x, y: np.ceil(x), (-5, 5), (0,)),
    11: ("Trunc", lambda x, y: np.trunc(x), (-5, 5), (0,)),
    12: ("ClampMax", lambda x, y: np.minimum(x, 0.5), (-2, 2), (0,)),
    13: ("ClampMin", lambda x, y: np.maximum(x, -0.25), (-2, 2), (0,)),
    14: ("Silu", lambda x, y: x / (1 + np.exp(-x)), (-6, 6), (0,)),
    15: ("Swish", lambda x, y: x / (1 + np.exp(-1.5 * x)), (-6, 6), (0,)),
    16: ("Gelu", lambda x, y: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), (-5, 5), (0,)),
    17: ("FasterGelu", lambda x, y: x / (1 + np.exp(-1.702 * x)), (-5, 5), (0,)),
    18: ("Power", lambda x, y: np.power(x, y), (0.1, 3), (0,)),
    19: ("Power", lambda x, y: np.power(x, 3.0), (-2, 2), (0,)),
    20: ("Power", lambda x, y: np.power(2.0, y), (0.1, 3), (0,)),
}
N = 512


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("math")
    return build_cases(sim, d, SRC, "math cases"), d


def run(sim, prog, case, api, dt, form=0, x=None, y=None):
    exe, d = prog
    rng = np.random.default_rng(api)
    lo, hi = APIS[api][2]
    x = rng.uniform(lo, hi, N).astype(dt) if x is None else x
    y = rng.uniform(0.1, 3, N).astype(dt) if y is None else y
    return sim.launch(exe, d, case, [np.array([api, N, form], np.int32), x, y], [((N,), dt)]), x, y


@pytest.mark.parametrize("api", sorted(APIS))
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_each_api_matches_numpy(sim, prog, api, dt):
    name, f, _, forms = APIS[api]
    for form in forms:
        res, x, y = run(sim, prog, "math_f32" if dt == np.float32 else "math_f16", api, dt, form)
        assert res.rc == 0 and res.rules("error") == set(), (name, form, res.violations)
        want = f(x.astype(np.float64), y.astype(np.float64))
        # computed in double and rounded once to the output type
        tol = dict(rtol=2e-7, atol=1e-7) if dt == np.float32 else dict(rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(res.outputs[0].astype(np.float64), want, **tol, err_msg=f"{name} form {form}")


def test_a_call_counts_the_instructions_of_its_composition(sim, prog):
    """Sigmoid = Muls (under its own name), Exp, Adds, Div: four vector instructions of N elements each; Log is
    one Ln-class instruction; the latency of Sigmoid exceeds that of ClampMax (one simple instruction)."""
    res, _, _ = run(sim, prog, "math_f32", 0, np.float32)
    vec = {(v["op"]): v for v in res.report["blocks"][0]["counters"]["vector"]}
    assert {"Sigmoid", "Exp", "Adds", "Div"} <= set(vec)
    assert all(vec[o]["elements"] == N and vec[o]["calls"] == 1 for o in ("Sigmoid", "Exp", "Adds", "Div"))
    res_clamp, _, _ = run(sim, prog, "math_f32", 12, np.float32)
    clamp_ops = {v["op"] for v in res_clamp.report["blocks"][0]["counters"]["vector"]}
    assert clamp_ops == {"ClampMax"}
    res_log, _, _ = run(sim, prog, "math_f32", 5, np.float32)
    assert [v["op"] for v in res_log.report["blocks"][0]["counters"]["vector"]] == ["Log"]
    from evokernel.verifier.backends.ascend_sim.hardware import vec_class

    assert vec_class("Log") == "exp" and vec_class("Floor") == "cast" and vec_class("Sigmoid") == "simple"
    from evokernel.verifier.backends.ascend_sim.latency_model import estimate_kernel

    assert estimate_kernel(res.report).us > estimate_kernel(res_clamp.report).us


def test_overlapping_source_and_destination_is_an_error_at_its_line(sim, prog):
    res, _, _ = run(sim, prog, "math_in_place", 0, np.float32)
    rule, line = RULES["math_in_place"]
    hits = [v for v in res.find(rule) if v["line"] == line]
    assert hits and hits[0]["severity"] == "error" and "overlap" in hits[0]["message"], res.violations


def test_an_integer_type_is_unsupported(sim, prog):
    res, _, _ = run(sim, prog, "math_int", 0, np.float32)
    rule, line = RULES["math_int"]
    assert [v for v in res.find(rule) if v["line"] == line], res.violations
