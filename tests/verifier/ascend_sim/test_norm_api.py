"""The high-level normalisation APIs (evk_sim/softmax_api.h and norm_api.h: SoftMax, SimpleSoftMax, LayerNorm in its [B, S, H] and
[A, R] forms, RmsNorm) against numpy for half and float, aligned and padded last axes, every documented form
(sharedTmpBuffer or not, sum/max outputs or not, in place where allowed, half data with float sum/max); each
misuse the documentation names (overlap, a tmp buffer below the tiling's need, a shape the tiling or the tensors
disagree with, an unpadded last axis, basic-block requirements) refused at its line; and the counted
composition."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

SRC = Path(__file__).parent / "norm_cases.cpp"
RULES = marked_lines(SRC)


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("norm-api")
    return build_cases(sim, d, SRC, "norm api cases"), d


def tol(dt):
    return dict(rtol=1e-5, atol=1e-6) if dt == np.float32 else dict(rtol=2e-3, atol=1e-3)


def padded(dt, rows, n, seed, lo=-3.0, hi=3.0):
    per = 32 // np.dtype(dt).itemsize
    k = -(-n // per) * per
    x = np.zeros((rows, k), dt)
    x[:, :n] = np.random.default_rng(seed).uniform(lo, hi, (rows, n)).astype(dt)
    return x, k


def clean(res):
    assert res.rc == 0 and res.rules("error") == set(), res.violations


@pytest.mark.parametrize("case,dt,ut", [("softmax_f32", np.float32, np.float32), ("softmax_f16", np.float16, np.float16),
                                        ("softmax_f16_f32", np.float16, np.float32)])
@pytest.mark.parametrize("m,n", [(4, 64), (3, 13), (5, 200)])
@pytest.mark.parametrize("form", [0, 1, 2, 3, 4, 5, 6])
def test_softmax_against_numpy(sim, prog, case, dt, ut, m, n, form):
    """Forms 0-5 SoftMax/SimpleSoftMax; 6 LogSoftMax, the documented log10 of the softmax."""
    exe, d = prog
    if form == 6 and dt != ut:
        pytest.skip("LogSoftMax has no half-data/float-sum form")
    x, k = padded(dt, m, n, seed=m * n + form)
    blk = 32 // np.dtype(ut).itemsize
    res = sim.launch(exe, d, case, [np.array([m, k, n, form], np.int32), x],
                     [((m, k), dt), ((m, blk), ut), ((m, blk), ut)])
    clean(res)
    xd = x[:, :n].astype(np.float64)
    mx = xd.max(axis=1, keepdims=True)
    e = np.exp(xd - mx)
    s = e.sum(axis=1, keepdims=True)
    want = np.log10(e / s) if form == 6 else e / s
    np.testing.assert_allclose(res.outputs[0][:, :n].astype(np.float64), want, **tol(dt))
    if form != 2:
        np.testing.assert_allclose(res.outputs[1].astype(np.float64), np.repeat(s, blk, 1), **tol(ut))
        np.testing.assert_array_equal(res.outputs[2].astype(np.float64), np.repeat(mx, blk, 1))


@pytest.mark.parametrize("case,dt", [("layernorm_f32", np.float32), ("layernorm_f16", np.float16)])
@pytest.mark.parametrize("b,s,h", [(1, 4, 64), (2, 3, 48), (1, 5, 256)])
@pytest.mark.parametrize("form", [0, 1, 2])
def test_layernorm_bsh_against_numpy(sim, prog, case, dt, b, s, h, form):
    exe, d = prog
    rng = np.random.default_rng(b * s * h + form)
    x = rng.uniform(-2, 2, (b * s, h)).astype(dt)
    g = rng.uniform(0.5, 1.5, h).astype(dt)
    be = rng.uniform(-0.5, 0.5, h).astype(dt)
    res = sim.launch(exe, d, case, [np.array([b, s, h, h, form], np.int32), x, g, be],
                     [((b * s, h), dt), ((b * s,), dt), ((b * s,), dt)])
    clean(res)
    xd = x.astype(np.float64)
    mu = xd.mean(axis=1)
    var = xd.var(axis=1)
    y = (xd - mu[:, None]) / np.sqrt(var[:, None] + float(dt(1e-5))) * g.astype(np.float64) + be.astype(np.float64)
    t = tol(dt)
    np.testing.assert_allclose(res.outputs[0].astype(np.float64), y, rtol=t["rtol"], atol=4 * t["atol"])
    np.testing.assert_allclose(res.outputs[1].astype(np.float64), mu, **t)
    np.testing.assert_allclose(res.outputs[2].astype(np.float64), var, **t)


@pytest.mark.parametrize("case,dt", [("layernorm_ar_f32", np.float32), ("layernorm_ar_f16", np.float16)])
@pytest.mark.parametrize("a,r", [(4, 64), (3, 20), (2, 100)])
@pytest.mark.parametrize("form", [0, 1, 2])
def test_layernorm_ar_against_numpy(sim, prog, case, dt, a, r, form):
    exe, d = prog
    rng = np.random.default_rng(a * r + form)
    per = 32 // np.dtype(dt).itemsize
    rp = -(-r // per) * per
    x = rng.uniform(-2, 2, (a, r)).astype(dt)
    g = rng.uniform(0.5, 1.5, r).astype(np.float32)
    be = rng.uniform(-0.5, 0.5, r).astype(np.float32)
    res = sim.launch(exe, d, case, [np.array([a, r, rp, form], np.int32), x, g, be],
                     [((a, r), dt), ((a,), np.float32), ((a,), np.float32)])
    clean(res)
    xd = x.astype(np.float64)
    mu = xd.mean(axis=1)
    rstd = 1 / np.sqrt(xd.var(axis=1) + float(np.float32(1e-5)))
    y = (xd - mu[:, None]) * rstd[:, None] * g + (be if form != 2 else 0)  # form 2: LayerNormConfig.isNoBeta
    t = tol(dt)
    np.testing.assert_allclose(res.outputs[0].astype(np.float64), y, rtol=t["rtol"], atol=4 * t["atol"])
    np.testing.assert_allclose(res.outputs[1], mu, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res.outputs[2], rstd, rtol=1e-6)


@pytest.mark.parametrize("case,dt", [("rmsnorm_f32", np.float32), ("rmsnorm_f16", np.float16)])
@pytest.mark.parametrize("bs,n", [(4, 64), (3, 13), (2, 300)])
@pytest.mark.parametrize("form", [0, 1, 2])
def test_rmsnorm_against_numpy(sim, prog, case, dt, bs, n, form):
    exe, d = prog
    x, h = padded(dt, bs, n, seed=bs * n + form)
    g = np.zeros(h, dt)
    g[:n] = np.random.default_rng(n).uniform(0.5, 1.5, n).astype(dt)
    res = sim.launch(exe, d, case, [np.array([bs, h, n, form], np.int32), x, g], [((bs, h), dt)])
    clean(res)
    xd = x[:, :n].astype(np.float64)
    eps = float(dt(1e-5))
    y = xd / np.sqrt((xd * xd).mean(axis=1, keepdims=True) + eps) * g[:n].astype(np.float64)
    np.testing.assert_allclose(res.outputs[0][:, :n].astype(np.float64), y, **tol(dt))


def test_rmsnorm_matches_the_documented_example(sim, prog):
    """The documentation's example: x = gamma = 0..15 (float), H = 16."""
    exe, d = prog
    x = np.arange(16, dtype=np.float32)[None, :]
    res = sim.launch(exe, d, "rmsnorm_f32", [np.array([1, 16, 16, 0], np.int32), x, x[0].copy()], [((1, 16), np.float32)])
    clean(res)
    doc = [0., 0.11359233, 0.4543693, 1.022331, 1.8174772, 2.8398082, 4.089324, 5.566024, 7.269909, 9.200979,
           11.359233, 13.744672, 16.357296, 19.197104, 22.264095, 25.558275]
    np.testing.assert_allclose(res.outputs[0][0], doc, rtol=1e-6, atol=1e-6)


def test_softmax_counts_its_composition(sim, prog):
    """float SoftMax over [4, 64]: WholeReduceMax, Sub, Exp, WholeReduceSum, Div over 256 elements, two Brcb; the
    half form adds two Casts; SimpleSoftMax has no reductions."""
    exe, d = prog
    x, k = padded(np.float32, 4, 64, seed=1)
    res = sim.launch(exe, d, "softmax_f32", [np.array([4, 64, 64, 0], np.int32), x],
                     [((4, 64), np.float32), ((4, 8), np.float32), ((4, 8), np.float32)])
    vec = {v["op"]: v for v in res.report["blocks"][0]["counters"]["vector"]}
    for op in ("WholeReduceMax", "Sub", "Exp", "WholeReduceSum", "Div"):
        assert vec[op]["elements"] == 256 and vec[op]["calls"] == 1, (op, vec)
    assert vec["Brcb"]["calls"] == 2 and "Cast" not in vec
    xh = x.astype(np.float16)
    res = sim.launch(exe, d, "softmax_f16", [np.array([4, 64, 64, 0], np.int32), xh],
                     [((4, 64), np.float16), ((4, 16), np.float16), ((4, 16), np.float16)])
    casts = [v for v in res.report["blocks"][0]["counters"]["vector"] if v["op"] == "Cast"]
    assert sum(v["calls"] for v in casts) == 2 and {v["dtype"] for v in casts} == {"half->float", "float->half"}


MISUSE_MESSAGE = {"softmax_tmp_small": "sharedTmpBuffer holds", "softmax_tmp_overlaps_src": "overlap",
                  "softmax_partial_overlap": "only full reuse", "softmax_sum_is_max": "overlap",
                  "softmax_unaligned_k": "32 bytes", "softmax_no_tiling": "never filled",
                  "softmax_stale_tiling": "isCheckTiling", "softmax_tensor_too_small": "holds 2048 elements",
                  "softmax_not_basic_block": "isBasicBlock", "logsoftmax_in_place": "overlap",
                  "layernorm_mean_overlaps_x": "overlap", "layernorm_tmp_small": "sharedTmpBuffer holds",
                  "layernorm_gamma_short": "gamma holds 16", "layernorm_ar_bad_padding": "rLengthWithPadding",
                  "layernorm_ar_in_place": "overlap", "layernorm_ar_gamma_half": "less precise",
                  "rmsnorm_dst_is_gamma": "overlap", "rmsnorm_not_basic_block": "isBasicBlock",
                  "rmsnorm_tmp_small": "sharedTmpBuffer holds", "softmax_int": "int32"}


@pytest.mark.parametrize("case", sorted(RULES))
def test_each_misuse_is_reported_at_its_line(sim, prog, case):
    exe, d = prog
    rule, line = RULES[case]
    res = sim.launch(exe, d, case, [np.zeros(8, np.float32)], [])
    hits = [v for v in res.find(rule) if v["line"] == line]
    assert hits, (case, res.violations)
    if case in MISUSE_MESSAGE:  # the check meant, not another one on the same line
        assert any(MISUSE_MESSAGE[case] in v["message"] for v in hits), (case, hits)


def test_the_misuse_cases_cover_every_check():
    """One case per named check (the kernels that would otherwise pass a wrong call)."""
    assert len(RULES) == 20 and set(MISUSE_MESSAGE) == set(RULES)


def test_a_qualifying_basic_block_is_clean(sim, prog):
    exe, d = prog
    res = sim.launch(exe, d, "softmax_basic_block_ok", [np.zeros(8, np.float32)], [])
    clean(res)


# ---- end to end: an operator project whose host calls the tiling functions and whose kernel calls SoftMax ----
PROJECT = Path(__file__).parent / "norm_softmax_project.py"


@pytest.mark.parametrize("rows,dim", [(64, 1024), (64, 1000), (320, 1024)])
def test_softmax_project_through_the_verifier(ascend_verifier, suite_task, rows, dim):
    """npu_l1/19_softmax (an aligned and an unaligned last axis; short and whole tiles): feasible, matches the
    reference."""
    task = suite_task("npu_l1/19_softmax.py", batch_size=rows, dim=dim)
    v = ascend_verifier.verify(task, PROJECT.read_text())
    assert v.feasible, v.feedback


def test_softmax_project_with_too_little_tmp_space_is_refused(ascend_verifier, suite_task):
    """The same project allocating half the tmp space its own SoftMaxTilingFunc call was told about (320 rows: 8
    per core, whole tiles, so the API runs the tiling as given and would write past the buffer)."""
    src = PROJECT.read_text().replace("pipe.InitBuffer(tmpBuf, t.tmpBytes);", "pipe.InitBuffer(tmpBuf, t.tmpBytes / 2);")
    v = ascend_verifier.verify(suite_task("npu_l1/19_softmax.py", batch_size=320, dim=1024), src)
    assert not v.feasible and "invalid_argument" in v.feedback and "sharedTmpBuffer" in v.feedback, v.feedback


def test_softmax_project_with_a_stale_tiling_is_refused(ascend_verifier, suite_task):
    """isCheckTiling=false with the last tile shorter than the tiling's rows: the API would use the stale tiling."""
    src = PROJECT.read_text().replace(
        "SoftMax<float>(yLocal", "SoftMax<float, false, false, false, NO_CHECK>(yLocal").replace(
        "constexpr int32_t BUFFER_NUM = 2;",
        "constexpr int32_t BUFFER_NUM = 2;\nconstexpr SoftmaxConfig NO_CHECK = {false, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};")
    assert "NO_CHECK>(yLocal" in src
    v = ascend_verifier.verify(suite_task("npu_l1/19_softmax.py", batch_size=60, dim=1024), src)
    assert not v.feasible and "isCheckTiling" in v.feedback, v.feedback


# ---- the host tiling functions (evk_sim/norm_tiling.h), compiled as a host program ----
HOST_PROGRAM = r"""
#include <cstdio>
#include <vector>
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(Td)
  TILING_DATA_FIELD_DEF(uint32_t, rows);
  TILING_DATA_FIELD_DEF_STRUCT(SoftMaxTiling, sm);
  TILING_DATA_FIELD_DEF_STRUCT(RmsNormTiling, rn);
END_TILING_DATA_DEF;
}
#define P(k, v) std::printf("%s %.9g\n", k, static_cast<double>(v))
int main() {
    ge::Shape s({8, 64});
    P("sm_min", AscendC::GetSoftMaxMinTmpSize(s, 4, false));
    P("sm_max", AscendC::GetSoftMaxMaxTmpSize(s, 4, false));
    optiling::Td td;
    AscendC::SoftMaxTilingFunc(s, 4, 3 * 320, td.sm);
    P("sm_splitM", td.get_sm().splitM); P("sm_rangeM", td.sm.rangeM); P("sm_tailM", td.sm.tailM);
    P("sm_outMaxK", td.sm.outMaxK); P("sm_splitSize", td.sm.splitSize);
    LogSoftMaxTiling lt;
    AscendC::LogSoftMaxTilingFunc(s, 4, AscendC::GetLogSoftMaxMinTmpSize(s, 4, false), lt);
    P("lsm_max", AscendC::GetLogSoftMaxMaxTmpSize(s, 4, false)); P("lsm_splitM", lt.splitM);
    P("td_size", sizeof(td)); P("td_sm_offset", reinterpret_cast<char*>(&td.sm) - reinterpret_cast<char*>(&td));
    uint32_t mx = 0, mn = 0;
    AscendC::GetLayerNormMaxMinTmpSize(ge::Shape({2, 16, 64, 64}), 2, false, mx, mn);
    P("ln_min", mn); P("ln_max", mx);
    LayerNormTiling ln;
    AscendC::GetLayerNormNDTilingInfo(ge::Shape({2, 16, 64, 64}), mn * 5, 2, false, ln);
    P("ln_rows", ln.bsCurLength); P("ln_loop", ln.loopRound); P("ln_tail", ln.meanVarTailSize);
    P("ln_back", ln.lastDimValueBack); P("ln_h", ln.hLength);
    LayerNormSeparateTiling ls;
    AscendC::GetLayerNormMaxMinTmpSize(ge::Shape({6, 20}), 4, false, true, false, mx, mn);
    AscendC::GetLayerNormNDTilingInfo(ge::Shape({6, 20}), mn * 4, 4, false, true, ls);
    P("ls_rows", ls.aCurLength); P("ls_r", ls.rLength); P("ls_back", ls.rValueBack);
    optiling::RmsNormTiling rn;
    P("rn_ok", AscendC::GetRmsNormMaxMinTmpSize(ge::Shape({2, 8, 64}), 2, mx, mn)); P("rn_min", mn);
    P("rn_info", optiling::GetRmsNormTilingInfo(ge::Shape({2, 8, 64}), ge::Shape({2, 8, 60}), 3 * mn, 2, rn));
    P("rn_rows", rn.mainBsLength); P("rn_loop", rn.loopRound); P("rn_tail", rn.tailBsLength);
    P("rn_recip", rn.reciprocalOfHLength); P("rn_b", rn.bLength); P("rn_s", rn.sLength);
    P("rn_small", AscendC::GetRmsNormTilingInfo(ge::Shape({2, 8, 64}), ge::Shape({2, 8, 64}), mn - 1, 2, rn));
    P("rn_unaligned", AscendC::GetRmsNormMaxMinTmpSize(ge::Shape({2, 8, 60}), 2, mx, mn));
    P("rn_basic_bad", AscendC::GetRmsNormTilingInfo(ge::Shape({2, 8, 48}), ge::Shape({2, 8, 48}), 1 << 20, 4, rn, true));
    P("rn_basic_ok", AscendC::GetRmsNormTilingInfo(ge::Shape({2, 8, 64}), ge::Shape({2, 8, 64}), 1 << 20, 4, rn, true));
    P("rn_basic_rows", rn.mainBsLength);
    return 0;
}
"""


@pytest.fixture(scope="module")
def host_tiling(tmp_path_factory):
    import subprocess

    from ascend_sim_harness import CXX, CXXFLAGS, INCLUDE
    d = tmp_path_factory.mktemp("norm-host")
    (d / "host.cpp").write_text(HOST_PROGRAM)
    r = subprocess.run([CXX, *CXXFLAGS, f"-I{INCLUDE}", "host.cpp", "-o", "host"], cwd=d, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    out = subprocess.run([str(d / "host")], capture_output=True, text=True, timeout=30, check=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def test_softmax_host_tiling(host_tiling):
    t = host_tiling
    assert (t["sm_min"], t["sm_max"]) == (64 * 4 + 64, 8 * 320)  # one row / all rows of the row-bytes model
    assert (t["sm_splitM"], t["sm_rangeM"], t["sm_tailM"]) == (3, 2, 2)  # 3 rows per pass for 960 bytes
    assert t["sm_outMaxK"] == 8 and t["sm_splitSize"] == 3 * 64
    assert t["lsm_max"] == 8 * 320 and t["lsm_splitM"] == 1  # LogSoftMax: the same model, one row at the minimum
    assert t["td_size"] == 4 + 16 * 4 + 12 * 4 and t["td_sm_offset"] == 4  # packed, in declaration order


def test_layernorm_host_tiling(host_tiling):
    t = host_tiling
    assert (t["ln_min"], t["ln_max"]) == (3 * 64 * 4 + 64, 32 * (3 * 64 * 4 + 64))
    assert (t["ln_rows"], t["ln_loop"], t["ln_tail"], t["ln_h"]) == (5, 6, 2, 64)
    assert t["ln_back"] == pytest.approx(1 / 64)
    assert (t["ls_rows"], t["ls_r"]) == (4, 20) and t["ls_back"] == pytest.approx(1 / 20)


def test_rmsnorm_host_tiling(host_tiling):
    t = host_tiling
    assert t["rn_ok"] == 1 and t["rn_min"] == 64 * 4 + 32
    assert t["rn_info"] == 1 and (t["rn_rows"], t["rn_loop"], t["rn_tail"]) == (3, 5, 1)
    assert t["rn_recip"] == pytest.approx(1 / 60) and (t["rn_b"], t["rn_s"]) == (2, 8)
    assert t["rn_small"] == 0  # below the minimum: false
    assert t["rn_unaligned"] == 0  # H not padded to 32 bytes: false
    assert t["rn_basic_bad"] == 0 and t["rn_basic_ok"] == 1 and t["rn_basic_rows"] % 8 == 0


LN_PROJECT = Path(__file__).parent / "norm_layernorm_project.py"


def test_layernorm_project_through_the_verifier(ascend_verifier, suite_task):
    """npu_l1/21_layer_norm (64 x 1000; host GetLayerNormMaxMinTmpSize + GetLayerNormNDTilingInfo, kernel LayerNorm
    row by row): feasible, matches the reference; with the tmp buffer a quarter short, refused."""
    task = suite_task("npu_l1/21_layer_norm.py", batch_size=64, features=1000)
    v = ascend_verifier.verify(task, LN_PROJECT.read_text())
    assert v.feasible, v.feedback
    bad = LN_PROJECT.read_text().replace("pipe.InitBuffer(tmpBuf, t.tmpBytes);",
                                         "pipe.InitBuffer(tmpBuf, t.tmpBytes / 4 * 3);")
    v = ascend_verifier.verify(task, bad)
    assert not v.feasible and "sharedTmpBuffer" in v.feedback, v.feedback
