"""LoadData 3D v2 (img2col) on the emulator's cube unit, against numpy: the loaded sub-matrix of the im2col matrix
(padding, stride, dilation, m/k windows and tails; into L0A, L0A transposed and L0B; half and float; the
SetFmatrix / SetLoadDataPaddingValue registers), a whole convolution (GM NHWC -> L1 NC1HWC0 -> img2col -> Mmad
-> Fixpipe) against a numpy conv2d, and each misuse reported at its line (conv_cases.cpp)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases, marked_lines

HERE = Path(__file__).parent
SRC = HERE / "conv_cases.cpp"
RULES = marked_lines(SRC)


@pytest.fixture(scope="module")
def conv_prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("conv")
    return build_cases(sim, d, SRC, "conv cases"), d


def im2col(x, kh, kw, sh, sw, dh, dw, pads, c0, pad_value=0.0):
    """The documented im2col matrix of one NHWC image: rows ho * Wo + wo, columns ((c1 * kh + i) * kw + j) * c0 + c.
    Rows past Ho * Wo (a tail rounded up) come from positions below the map: all padding. Returns (X, Ho, Wo)."""
    h, w, c = x.shape
    pl, pr, pt, pb = pads
    xp = np.full((h + pt + pb + 64 * sh, w + pl + pr, c), pad_value, np.float64)
    xp[pt:pt + h, pl:pl + w] = x
    ho = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    wo = (w + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    c1 = c // c0
    rows = []
    for m in range(ho * wo + 64):
        oh, ow = divmod(m, wo)
        row = []
        for b in range(c1):
            for i in range(kh):
                for j in range(kw):
                    row.append(xp[oh * sh + i * dh, ow * sw + j * dw, b * c0:(b + 1) * c0])
        rows.append(np.concatenate(row))
    return np.array(rows), ho, wo


# (H, W, C, Kh, Kw, sH, sW, dH, dW, pads (l, r, t, b), mStart, mExt, kStart, kExt)
CASES = {
    "1x1": (4, 8, 16, 1, 1, 1, 1, 1, 1, (0, 0, 0, 0), 0, 32, 0, 16),
    "3x3_pad1": (6, 6, 16, 3, 3, 1, 1, 1, 1, (1, 1, 1, 1), 0, 48, 48, 96),
    "stride2_asym_pad": (7, 9, 32, 3, 2, 2, 2, 1, 1, (1, 0, 2, 1), 0, 32, 96, 96),
    "dilation2": (9, 8, 16, 3, 3, 1, 1, 2, 2, (2, 2, 2, 2), 16, 32, 32, 96),
    "m_k_window": (8, 8, 32, 2, 2, 1, 1, 1, 1, (0, 1, 0, 1), 16, 32, 64, 64),
    "m_tail": (5, 5, 16, 3, 3, 1, 1, 1, 1, (0, 0, 0, 0), 0, 9, 64, 80),
}


def run_case(sim, conv_prog, name, dtype, mode, regs=False, pad_value=0.0):
    exe, d = conv_prog
    H, W, C, kh, kw, sh, sw, dh, dw, pads, ms, me, ks, ke = CASES[name]
    c0 = 32 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (H, W, C)).astype(dtype)
    X, ho, wo = im2col(x.astype(np.float64), kh, kw, sh, sw, dh, dw, pads, c0, pad_value)
    S = X[ms:ms + me, ks:ks + ke]
    side = ke if mode == 0 else me
    eye = np.eye(side, dtype=dtype)
    prm = np.array([H, W, C, kh, kw, sh, sw, dh, dw, *pads, ms, me, ks, ke, mode, int(regs),
                    int(round(pad_value * 1000))], np.int32)
    exp = S.T if mode == 1 else S
    case = "img2col_f16" if dtype == np.float16 else "img2col_f32"
    res = sim.launch(exe, d, case, [prm, x.reshape(-1), eye.reshape(-1)], [(exp.shape, np.float32)])
    return res, exp


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["L0A", "L0A_transposed", "L0B"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=["half", "float"])
def test_img2col_load_matches_numpy(sim, conv_prog, name, mode, dtype):
    res, exp = run_case(sim, conv_prog, name, dtype, mode)
    assert res.rc == 0, res.stderr
    assert res.rules("error") == set(), res.violations
    # the identity product is exact: x * 1 and sums with zeros
    assert np.array_equal(res.outputs[0], exp.astype(np.float32)), name


def test_registers_and_pad_value(sim, conv_prog):
    """SetFmatrix + SetLoadDataPaddingValue with IsResetLoad3dConfig{false, false}: the params' l1H/l1W/padValue
    are ignored (set to 1 x 1 and 0 in the kernel), the registers' are used; the pad value shows in the output."""
    res, exp = run_case(sim, conv_prog, "3x3_pad1", np.float16, 0, regs=True, pad_value=0.5)
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    assert (exp == 0.5).any()
    assert np.array_equal(res.outputs[0], exp.astype(np.float32))


def conv2d_nhwc(x, w, sh, sw, dh, dw, pads):
    """numpy reference: x [H, W, C], w [Cout, C, Kh, Kw] (PyTorch's OIHW) -> [Ho, Wo, Cout]."""
    pl, pr, pt, pb = pads
    xp = np.pad(x, ((pt, pb), (pl, pr), (0, 0)))
    cout, c, kh, kw = w.shape
    ho = (xp.shape[0] - ((kh - 1) * dh + 1)) // sh + 1
    wo = (xp.shape[1] - ((kw - 1) * dw + 1)) // sw + 1
    out = np.zeros((ho, wo, cout))
    for i in range(kh):
        for j in range(kw):
            patch = xp[i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw, :]
            out += patch @ w[:, :, i, j].T
    return out


CONVS = {  # H, W, C, Cout, Kh, Kw, sH, sW, dH, dW, pads, mt
    "3x3_same": (12, 12, 16, 32, 3, 3, 1, 1, 1, 1, (1, 1, 1, 1), 48),
    "5x3_stride2_dil": (15, 13, 16, 24, 5, 3, 2, 1, 1, 2, (2, 1, 0, 3), 32),
    "1x1_c48": (9, 7, 48, 16, 1, 1, 1, 1, 1, 1, (0, 0, 0, 0), 32),
}


@pytest.mark.parametrize("name", sorted(CONVS))
@pytest.mark.parametrize("case", ["conv_f16", "conv_f32", "conv_f16_f16"])
def test_convolution_kernel_matches_numpy_conv2d(sim, conv_prog, name, case):
    exe, d = conv_prog
    H, W, C, cout, kh, kw, sh, sw, dh, dw, pads, mt = CONVS[name]
    dtype = np.float32 if case == "conv_f32" else np.float16
    c0 = 32 // np.dtype(dtype).itemsize
    if C % c0:
        pytest.skip("channels not a multiple of C0")
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (H, W, C)).astype(dtype)
    w = rng.uniform(-1, 1, (cout, C, kh, kw)).astype(dtype)
    ref = conv2d_nhwc(x.astype(np.float64), w.astype(np.float64), sh, sw, dh, dw, pads)
    # the documented filter format: K ordered (c1, kh, kw, c0), one row of B^T per output channel
    wk = w.reshape(cout, C // c0, c0, kh, kw).transpose(0, 1, 3, 4, 2).reshape(cout, -1)
    prm = np.array([H, W, C, kh, kw, sh, sw, dh, dw, *pads, cout, mt], np.int32)
    ho, wo = ref.shape[:2]
    out_dt = np.float16 if case == "conv_f16_f16" else np.float32
    res = sim.launch(exe, d, case, [prm, x.reshape(-1), np.ascontiguousarray(wk).reshape(-1)],
                     [((ho * wo, cout), out_dt)])
    assert res.rc == 0, res.stderr
    assert res.rules("error") == set(), res.violations
    got = res.outputs[0].astype(np.float64).reshape(ho, wo, cout)
    tol = 2e-3 if case == "conv_f16_f16" else 1e-5
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * C * kh * kw ** 0.5)
    cube = res.report["blocks"][0]["counters"]["cube"]
    assert cube["macs_half" if dtype == np.float16 else "macs_float"] == ho * wo * cout * C * kh * kw
    assert res.report["blocks"][0]["timing_estimate"]["busy_cycles"]["mte1"] > 0


@pytest.mark.parametrize("case", sorted(RULES))
def test_img2col_misuse_is_reported_at_its_line(sim, conv_prog, case):
    exe, d = conv_prog
    rule, line = RULES[case]
    x = np.ones(2048, np.float16)
    res = sim.launch(exe, d, case, [x], [((256,), np.float16)])
    hits = [v for v in res.find(rule) if v["line"] == line and Path(v["file"]).name == SRC.name]
    assert hits, f"{rule} not reported at {SRC.name}:{line}: {res.violations}"


def _random_convs(n: int, seed: int = 33) -> list[tuple]:
    """Seeded random convolutions within the test kernel's limits (the map in L1, an M tile and all of K in L0A, the
    weights in L0B): channels 16/32, kernels 1..3 each way, stride 1..3, dilation 1..2, padding 0..2 per side."""
    import random

    rng, out = random.Random(seed), []
    while len(out) < n:
        c, cout = rng.choice([16, 32]), rng.choice([16, 32])
        kh, kw, sh, sw, dh, dw = (rng.randint(1, 3) for _ in range(6))
        dh, dw = min(dh, 2), min(dw, 2)
        pads = tuple(rng.randint(0, 2) for _ in range(4))
        h, w = rng.randint(3, 14), rng.randint(3, 14)
        ho = (h + pads[2] + pads[3] - ((kh - 1) * dh + 1)) // sh + 1
        wo = (w + pads[0] + pads[1] - ((kw - 1) * dw + 1)) // sw + 1
        if ho < 1 or wo < 1 or c * kh * kw > 160:  # K x (M tile or Cout) float fits the test kernel's L0 buffers
            continue
        out.append((h, w, c, cout, kh, kw, sh, sw, dh, dw, pads, rng.choice([16, 32, 48])))
    return out


def _conv_id(s: tuple) -> str:
    return "x".join(map(str, s[:10])) + "_p" + "".join(map(str, s[10]))


@pytest.mark.parametrize("shape", _random_convs(8), ids=_conv_id)
@pytest.mark.parametrize("case", ["conv_f32", "conv_f16"])
def test_convolution_kernel_matches_torch_on_random_shapes(sim, conv_prog, shape, case):
    """The whole LoadData-3D convolution against PyTorch's conv2d (asymmetric padding through F.pad) and the loaded
    im2col rows against torch's unfold, on seeded random shapes with padding, stride and dilation."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    exe, d = conv_prog
    H, W, C, cout, kh, kw, sh, sw, dh, dw, pads, mt = shape
    dtype = np.float32 if case == "conv_f32" else np.float16
    c0 = 32 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(sum(shape[:10]))
    x = rng.uniform(-1, 1, (H, W, C)).astype(dtype)
    w = rng.uniform(-1, 1, (cout, C, kh, kw)).astype(dtype)
    xt = F.pad(torch.from_numpy(x.astype(np.float64)).permute(2, 0, 1)[None], (pads[0], pads[1], pads[2], pads[3]))
    ref = F.conv2d(xt, torch.from_numpy(w.astype(np.float64)), stride=(sh, sw), dilation=(dh, dw))[0]
    ref = ref.permute(1, 2, 0).numpy()  # [Ho, Wo, Cout]
    ho, wo = ref.shape[:2]
    # our numpy im2col (what the load emulation is checked against above) agrees with torch's unfold
    X, ho2, wo2 = im2col(x.astype(np.float64), kh, kw, sh, sw, dh, dw, pads, c0)
    cols = F.unfold(xt, (kh, kw), dilation=(dh, dw), stride=(sh, sw))[0].T.numpy()  # [Ho*Wo, (c, kh, kw)]
    perm = cols.reshape(ho * wo, C // c0, c0, kh, kw).transpose(0, 1, 3, 4, 2).reshape(ho * wo, -1)
    assert (ho2, wo2) == (ho, wo) and np.array_equal(X[:ho * wo], perm)
    wk = w.reshape(cout, C // c0, c0, kh, kw).transpose(0, 1, 3, 4, 2).reshape(cout, -1)
    prm = np.array([H, W, C, kh, kw, sh, sw, dh, dw, *pads, cout, mt], np.int32)
    res = sim.launch(exe, d, case, [prm, x.reshape(-1), np.ascontiguousarray(wk).reshape(-1)],
                     [((ho * wo, cout), np.float32)])
    assert res.rc == 0, res.stderr
    assert res.rules("error") == set(), res.violations
    got = res.outputs[0].astype(np.float64).reshape(ho, wo, cout)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * C * kh * kw)
