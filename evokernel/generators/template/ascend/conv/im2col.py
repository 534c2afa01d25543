"""The vector cores' side of the cube lowering of a convolution (:mod:`.implicit_gemm`): the kernel class that
writes ``col`` into the GM workspace before the GEMM (im2col), builds ``W' = [W | bias]``, and copies the padded C
into the NCHW output after it.

im2col, per row ``(n, ci, kh, kw)`` of ``col`` and chunk of output rows: one multi-row ``DataCopyPad`` of the input
rows the tap reads (``STRIDE_H * W`` apart in GM) into UB rows of ``ceil8(Wo)`` floats, the convolution's zero
padding as ``leftPadding`` / ``rightPadding``, and one ``DataCopyPad`` into ``col`` (a ``TQueBind<VECIN, VECOUT>``
orders MTE2 -> MTE3); rows above and below the image from a zeroed UB row. 1-D at stride 1: a copy's rows are
input channels (one tap, ``kw`` col rows apart). A stride along W: each output row's input span
(``(Wo - 1) * STRIDE_W + 1`` columns) lands in UB the same way and one ``Gather`` per row picks every
``STRIDE_W``-th value (byte offsets set once by the scalar unit, an ``S_V`` flag before first use).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.conv.gemm_shape import FILL, _ci_rows


def vector_class(op: Any, tiling_cls: str, s: dict[str, int]) -> str:
    """The vector cores' class: Im2col (before the GEMM), WeightsWithBias, CopyOut (after it)."""
    (sh, _), (ph, pw), (dh, dw) = op.stride, op.padding, op.dilation
    x, wt = op.exts[0].name, op.exts[1].name
    bias = op.bias
    b = op.exts[2].name if bias else ""
    args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts)
    bias_init = (f"        biasGm.SetGlobalBuffer((__gm__ float*){b}, cout);\n"
                 f"        wGm.SetGlobalBuffer((__gm__ float*){wt}, cout * kc);\n"
                 "        wMatGm.SetGlobalBuffer((__gm__ float*)workspace + colFloats, cout * K);\n"
                 "        pipe.InitBuffer(biasBuf, (cout + 7) / 8 * 8 * sizeof(float));\n") if bias else ""
    extra_items = "batch + 1" if bias else "0"  # the ones rows of every image, and W' (one item)
    bias_items = """            if (item >= convItems) {  // the bias: a row of ones in col[n], or W' = [W | bias]
                if (item - convItems < batch) {
                    FillGm(colGm[((item - convItems) * K + kc) * Np], P, ones);
                } else {
                    WeightsWithBias();
                }
                continue;
            }
""" if bias else ""
    weights_fn = """    __aicore__ inline void WeightsWithBias()
    {
        // W' (cout x K, K = kc + 1): each weight row of kc floats, then the output channel's bias
        LocalTensor<float> biasLocal = biasBuf.Get<float>();
        DataCopyExtParams bCopy{1, static_cast<uint32_t>(cout * sizeof(float)), 0, 0, 0};
        DataCopyPadExtParams<float> noPad{false, 0, 0, 0.0f};
        DataCopyPad(biasLocal, biasGm, bCopy, noPad);
        TEventID toScalar = GetTPipePtr()->FetchEventID(HardEvent::MTE2_S);
        SetFlag<HardEvent::MTE2_S>(toScalar);
        WaitFlag<HardEvent::MTE2_S>(toScalar);
        uint32_t rowFloats = (K + 7) / 8 * 8;  // a UB row of W': kc weights, the bias, padding
        for (uint32_t co0 = 0; co0 < cout; co0 += rowsW) {
            uint32_t rows = Min(rowsW, cout - co0);
            LocalTensor<float> buf = que.AllocTensor<float>();
            DataCopyExtParams in{static_cast<uint16_t>(rows), static_cast<uint32_t>(kc * sizeof(float)), 0,
                                 static_cast<uint32_t>((rowFloats - (kc + 7) / 8 * 8) / 8), 0};
            DataCopyPad(buf, wGm[co0 * kc], in, noPad);
            que.EnQue(buf);
            buf = que.DeQue<float>();
            TEventID wait = GetTPipePtr()->FetchEventID(HardEvent::MTE2_S);
            SetFlag<HardEvent::MTE2_S>(wait);
            WaitFlag<HardEvent::MTE2_S>(wait);
            for (uint32_t r = 0; r < rows; ++r) {
                buf.SetValue(r * rowFloats + kc, biasLocal.GetValue(co0 + r));
            }
            TEventID toMte3 = GetTPipePtr()->FetchEventID(HardEvent::S_MTE3);
            SetFlag<HardEvent::S_MTE3>(toMte3);
            WaitFlag<HardEvent::S_MTE3>(toMte3);
            DataCopyExtParams out{static_cast<uint16_t>(rows), static_cast<uint32_t>(K * sizeof(float)), 0, 0, 0};
            DataCopyPad(wMatGm[co0 * K], buf, out);
            que.FreeTensor(buf);
        }
    }
""" if bias else ""
    bias_members = ("    GlobalTensor<float> biasGm, wGm, wMatGm;\n    TBuf<TPosition::VECCALC> biasBuf;\n"
                    if bias else "")
    sw = op.stride[1]
    body = _BODY_1D if _ci_rows(op) else _BODY_2D if sw == 1 else _strided_body()
    return (_im2col_head(sh, sw, ph, pw, dh, dw, args, tiling_cls, x, bias_init, op, bias)
            + _im2col_body(extra_items, bias_items, body, sw, _ci_rows, op)
            + _im2col_copy_out(weights_fn, bias_members, sw))


def _im2col_head(sh: Any, sw: Any, ph: Any, pw: Any, dh: Any, dw: Any, args: Any, tiling_cls: Any, x: Any,
                 bias_init: Any, op: Any, bias: Any) -> str:
    """The class and its Init."""
    return f"""constexpr int32_t STRIDE_H = {sh}, STRIDE_W = {sw}, PAD_H = {ph}, PAD_W = {pw}, DIL_H = {dh}, DIL_W = {dw};
constexpr uint32_t FILL = {FILL};

__aicore__ inline uint32_t Max(uint32_t a, uint32_t b) {{ return a > b ? a : b; }}

// The vector cores: im2col into the workspace (before the GEMM), the padded C to the output (after it).
class KernelIm2col{op.op_type} {{
public:
    __aicore__ inline KernelIm2col{op.op_type}() {{}}
    __aicore__ inline void Init({args}, GM_ADDR out, GM_ADDR workspace, const {tiling_cls}& t)
    {{
        batch = t.batch; cin = t.cin; h = t.h; w = t.w; cout = t.cout; ho = t.ho; wo = t.wo; kh = t.kh; kw = t.kw;
        K = t.K; P = t.P; Np = t.Np; kc = t.kc; wa = t.wa; rowsPerChunk = t.rowsPerChunk; ohChunks = t.ohChunks;
        rowsW = t.rowsW; outPiece = t.outPiece; outRows = t.outRows; copyOut = t.copyOut; spanA = t.spanA;
        vid = GetBlockIdx();
        vnum = GetBlockNum() * GetTaskRation();
        uint64_t colFloats = (static_cast<uint64_t>(batch) * K * Np + 63) / 64 * 64;
        uint64_t wFloats = {"(static_cast<uint64_t>(cout) * K + 63) / 64 * 64" if bias else "0"};
        xGm.SetGlobalBuffer((__gm__ float*){x}, batch * cin * h * w);
        colGm.SetGlobalBuffer((__gm__ float*)workspace, batch * K * Np);
        cPadGm.SetGlobalBuffer((__gm__ float*)workspace + colFloats + wFloats, batch * cout * Np);
        outGm.SetGlobalBuffer((__gm__ float*)out, batch * cout * P);
{bias_init}        uint32_t bufFloats = {"0" if sw > 1 else "rowsPerChunk * wa"};
        if (outRows * outPiece > bufFloats) bufFloats = outRows * outPiece;
        {"if (rowsW * ((K + 7) / 8 * 8) > bufFloats) bufFloats = rowsW * ((K + 7) / 8 * 8);" if bias else ""}
        pipe.InitBuffer(que, BUFFER_NUM, bufFloats * sizeof(float));
        pipe.InitBuffer(fillBuf, 2 * FILL * sizeof(float));
{_STRIDED_INIT if sw > 1 else ""}    }}
"""


def _im2col_body(extra_items: Any, bias_items: Any, body: Any, sw: Any, _ci_rows: Any, op: Any) -> str:
    """Im2col: the col rows of each work item, W' with the bias column."""
    return f"""    __aicore__ inline void Im2col()
    {{
        LocalTensor<float> fill = fillBuf.Get<float>();
        zeros = fill;
        ones = fill[FILL];
        Duplicate(zeros, 0.0f, FILL);
        Duplicate(ones, 1.0f, FILL);
{_STRIDED_OFFSETS if sw > 1 else ""}        TEventID ready = GetTPipePtr()->FetchEventID(HardEvent::V_MTE3);  // the constant rows before their copies
        SetFlag<HardEvent::V_MTE3>(ready);
        WaitFlag<HardEvent::V_MTE3>(ready);
        uint32_t taps = kh * kw, convItems = batch * {'kw' if _ci_rows(op) else 'kc'} * ohChunks;
        for (uint32_t item = vid; item < convItems + {extra_items}; item += vnum) {{
{bias_items}{body}        }}
    }}
"""


def _im2col_copy_out(weights_fn: Any, bias_members: Any, sw: Any) -> str:
    """CopyOut (C's padded rows into the output), the helpers and the members."""
    return f"""    __aicore__ inline void CopyOut()
    {{
        // C (rows of Np floats in the workspace) -> out (rows of P floats): outRows rows x outPiece columns a unit
        uint32_t rowsAll = batch * cout, pieces = (P + outPiece - 1) / outPiece;
        uint32_t units = (rowsAll + outRows - 1) / outRows * pieces;
        for (uint32_t u = vid; u < units; u += vnum) {{
            uint32_t r0 = (u / pieces) * outRows, c0 = (u % pieces) * outPiece;
            uint32_t rows = Min(outRows, rowsAll - r0), cw = Min(outPiece, P - c0);
            LocalTensor<float> buf = que.AllocTensor<float>();
            DataCopyExtParams in{{static_cast<uint16_t>(rows), static_cast<uint32_t>(cw * sizeof(float)),
                                 static_cast<uint32_t>((Np - cw) * sizeof(float)),
                                 static_cast<uint32_t>((outPiece - (cw + 7) / 8 * 8) / 8), 0}};
            DataCopyPadExtParams<float> noPad{{false, 0, 0, 0.0f}};
            DataCopyPad(buf, cPadGm[static_cast<uint64_t>(r0) * Np + c0], in, noPad);
            que.EnQue(buf);
            buf = que.DeQue<float>();
            DataCopyExtParams outCopy{{static_cast<uint16_t>(rows), static_cast<uint32_t>(cw * sizeof(float)),
                                      static_cast<uint32_t>((outPiece - (cw + 7) / 8 * 8) / 8),
                                      static_cast<uint32_t>((P - cw) * sizeof(float)), 0}};
            DataCopyPad(outGm[static_cast<uint64_t>(r0) * P + c0], buf, outCopy);
            que.FreeTensor(buf);
        }}
    }}

private:
    __aicore__ inline void FillGm(const GlobalTensor<float>& dst, uint32_t count, const LocalTensor<float>& value)
    {{
        // count floats of a constant row (zeros or ones) into GM, FILL at a time
        for (uint32_t done = 0; done < count; done += FILL) {{
            DataCopyExtParams copy{{1, static_cast<uint32_t>(Min(FILL, count - done) * sizeof(float)), 0, 0, 0}};
            DataCopyPad(dst[done], value, copy);
        }}
    }}
{weights_fn}
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, BUFFER_NUM> que;  // GM -> UB -> GM: MTE2 -> MTE3
    TBuf<TPosition::VECCALC> fillBuf;
    LocalTensor<float> zeros, ones;
    GlobalTensor<float> xGm, colGm, cPadGm, outGm;
{bias_members}    uint32_t batch = 0, cin = 0, h = 0, w = 0, cout = 0, ho = 0, wo = 0, kh = 0, kw = 0, K = 0, P = 0, Np = 0;
    uint32_t kc = 0, wa = 0, rowsPerChunk = 0, ohChunks = 0, rowsW = 0, outPiece = 0, outRows = 0, copyOut = 0;
    uint32_t spanA = 0;
    uint32_t vid = 0, vnum = 1;
{_STRIDED_MEMBERS if sw > 1 else ""}}};
"""



_BODY_2D = '''            // row (ci, r, s) of col[n] for output rows [oh0, oh0 + rows)
            uint32_t chunk = item % ohChunks, k = (item / ohChunks) % kc, n = item / ohChunks / kc;
            uint32_t ci = k / taps, r = (k % taps) / kw, s = k % kw;
            uint32_t oh0 = chunk * rowsPerChunk, ohEnd = Min(oh0 + rowsPerChunk, ho);
            // output rows whose input row ih = oh * STRIDE_H + r * DIL_H - PAD_H lies in [0, h)
            int32_t base = static_cast<int32_t>(r * DIL_H) - PAD_H;
            int32_t first = base >= 0 ? 0 : (-base + STRIDE_H - 1) / STRIDE_H;
            int32_t last = static_cast<int32_t>(h) - 1 - base < 0 ? -1 : (static_cast<int32_t>(h) - 1 - base) / STRIDE_H;
            uint32_t ohA = Min(Max(static_cast<uint32_t>(first), oh0), ohEnd);
            uint32_t ohB = last < 0 ? ohA : Max(Min(static_cast<uint32_t>(last) + 1, ohEnd), ohA);
            uint64_t row = (static_cast<uint64_t>(n) * K + k) * Np;
            // input column of output column 0; [0, lo) and [hi, wo) are the convolution's zero padding
            int32_t off = static_cast<int32_t>(s * DIL_W) - PAD_W;
            int32_t lo = off < 0 ? -off : 0;
            int32_t hi = static_cast<int32_t>(w) - off;
            if (hi > static_cast<int32_t>(wo)) hi = static_cast<int32_t>(wo);
            if (hi <= lo) {
                ohB = ohA;  // the tap reads only padding
            }
            FillGm(colGm[row + oh0 * wo], (ohA - oh0) * wo, zeros);
            FillGm(colGm[row + ohB * wo], (ohEnd - ohB) * wo, zeros);
            if (ohB > ohA) {
                uint32_t count = static_cast<uint32_t>(hi - lo);
                uint32_t ih = ohA * STRIDE_H + base;
                LocalTensor<float> buf = que.AllocTensor<float>();
                // one UB row of wa floats per output row: lo zeros, count inputs, wo - hi zeros
                DataCopyExtParams in{static_cast<uint16_t>(ohB - ohA), static_cast<uint32_t>(count * sizeof(float)),
                                     static_cast<uint32_t>((STRIDE_H * w - count) * sizeof(float)), 0, 0};
                DataCopyPadExtParams<float> pad{true, static_cast<uint8_t>(lo), static_cast<uint8_t>(wo - hi), 0.0f};
                DataCopyPad(buf, xGm[((n * cin + ci) * h + ih) * w + (lo + off)], in, pad);
                que.EnQue(buf);
                buf = que.DeQue<float>();
                DataCopyExtParams outCopy{static_cast<uint16_t>(ohB - ohA), static_cast<uint32_t>(wo * sizeof(float)), 0, 0, 0};
                DataCopyPad(colGm[row + ohA * wo], buf, outCopy);  // packed: col column oh * wo + ow
                que.FreeTensor(buf);
            }
'''
_BODY_1D = '''            // rows (ci0 + c, s) of col[n] (kw rows apart) for rowsPerChunk input channels of tap s
            uint32_t chunk = item % ohChunks, s = (item / ohChunks) % kw, n = item / ohChunks / kw;
            uint32_t ci0 = chunk * rowsPerChunk, rows = Min(rowsPerChunk, cin - ci0);
            uint64_t row = (static_cast<uint64_t>(n) * K + ci0 * kw + s) * Np;
            // input column of output column 0; [0, lo) and [hi, wo) are the convolution's zero padding
            int32_t off = static_cast<int32_t>(s * DIL_W) - PAD_W;
            int32_t lo = off < 0 ? -off : 0;
            int32_t hi = static_cast<int32_t>(w) - off;
            if (hi > static_cast<int32_t>(wo)) hi = static_cast<int32_t>(wo);
            if (hi <= lo) {  // the tap reads only padding
                for (uint32_t c = 0; c < rows; ++c) {
                    FillGm(colGm[row + c * kw * Np], wo, zeros);
                }
                continue;
            }
            uint32_t count = static_cast<uint32_t>(hi - lo);
            LocalTensor<float> buf = que.AllocTensor<float>();
            // one UB row of wa floats per input channel: lo zeros, count inputs, wo - hi zeros
            DataCopyExtParams in{static_cast<uint16_t>(rows), static_cast<uint32_t>(count * sizeof(float)),
                                 static_cast<uint32_t>((w - count) * sizeof(float)), 0, 0};
            DataCopyPadExtParams<float> pad{true, static_cast<uint8_t>(lo), static_cast<uint8_t>(wo - hi), 0.0f};
            DataCopyPad(buf, xGm[(n * cin + ci0) * w + (lo + off)], in, pad);
            que.EnQue(buf);
            buf = que.DeQue<float>();
            DataCopyExtParams outCopy{static_cast<uint16_t>(rows), static_cast<uint32_t>(wo * sizeof(float)), 0,
                                      static_cast<uint32_t>((kw * Np - wo) * sizeof(float)), 0};
            DataCopyPad(colGm[row], buf, outCopy);  // col rows (ci, s) are kw * Np floats apart
            que.FreeTensor(buf);
'''


# A stride along W: each output row's input span ((wo - 1) * STRIDE_W + 1 columns, padding included) lands in UB
# by the same multi-row DataCopyPad, and one Gather per row picks every STRIDE_W-th value (byte offsets set once).
_STRIDED_INIT = """        pipe.InitBuffer(inQue, BUFFER_NUM, rowsPerChunk * spanA * sizeof(float));
        pipe.InitBuffer(gQue, BUFFER_NUM, rowsPerChunk * wa * sizeof(float));
        pipe.InitBuffer(idxBuf, wa * sizeof(uint32_t));
"""
_STRIDED_OFFSETS = """        idx = idxBuf.Get<uint32_t>();
        for (uint32_t i = 0; i < wo; ++i) {
            idx.SetValue(i, i * STRIDE_W * sizeof(float));  // Gather's byte offsets: every STRIDE_W-th value
        }
        TEventID offsets = GetTPipePtr()->FetchEventID(HardEvent::S_V);
        SetFlag<HardEvent::S_V>(offsets);
        WaitFlag<HardEvent::S_V>(offsets);
"""
_STRIDED_MEMBERS = """    TQue<TPosition::VECIN, BUFFER_NUM> inQue;  // the input spans
    TQue<TPosition::VECOUT, BUFFER_NUM> gQue;  // their gathered rows
    TBuf<TPosition::VECCALC> idxBuf;
    LocalTensor<uint32_t> idx;
"""


def _strided_body() -> str:
    b = _BODY_2D
    def rep(old: str, new: str) -> None:
        nonlocal b
        assert b.count(old) == 1, old
        b = b.replace(old, new)
    rep("""            // input column of output column 0; [0, lo) and [hi, wo) are the convolution's zero padding
            int32_t off = static_cast<int32_t>(s * DIL_W) - PAD_W;
            int32_t lo = off < 0 ? -off : 0;
            int32_t hi = static_cast<int32_t>(w) - off;
            if (hi > static_cast<int32_t>(wo)) hi = static_cast<int32_t>(wo);""",
        """            // input column of output column 0; span [0, lo) and [hi, span) are the convolution's zero padding
            int32_t span = static_cast<int32_t>((wo - 1) * STRIDE_W + 1);
            int32_t off = static_cast<int32_t>(s * DIL_W) - PAD_W;
            int32_t lo = off < 0 ? -off : 0;
            int32_t hi = static_cast<int32_t>(w) - off;
            if (hi > span) hi = span;""")
    rep("""                LocalTensor<float> buf = que.AllocTensor<float>();
                // one UB row of wa floats per output row: lo zeros, count inputs, wo - hi zeros""",
        """                LocalTensor<float> buf = inQue.AllocTensor<float>();
                // one UB row of spanA floats per output row: lo zeros, count inputs, span - hi zeros""")
    rep("static_cast<uint8_t>(wo - hi), 0.0f}", "static_cast<uint8_t>(span - hi), 0.0f}")
    rep("""                que.EnQue(buf);
                buf = que.DeQue<float>();
                DataCopyExtParams outCopy""", """                inQue.EnQue(buf);
                buf = inQue.DeQue<float>();
                LocalTensor<float> g = gQue.AllocTensor<float>();
                for (uint32_t i = 0; i < ohB - ohA; ++i) {
                    Gather(g[i * wa], buf[i * spanA], idx, 0, wo);  // g[i][ow] = span row i [ow * STRIDE_W]
                }
                gQue.EnQue(g);
                inQue.FreeTensor(buf);
                g = gQue.DeQue<float>();
                DataCopyExtParams outCopy""")
    rep("""                DataCopyPad(colGm[row + ohA * wo], buf, outCopy);  // packed: col column oh * wo + ow
                que.FreeTensor(buf);""", """                DataCopyPad(colGm[row + ohA * wo], g, outCopy);  // packed: col column oh * wo + ow
                gQue.FreeTensor(g);""")
    return b
