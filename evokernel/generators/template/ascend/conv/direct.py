"""The ``ascend_conv`` family's vector lowering (``lowering = vector``, and every grouped or depthwise convolution): a
direct convolution on the vector cores. A block's unit of work is a chunk of ``woTile`` columns of one output row
``(n, oh)`` for a pass of ``co_tile`` output channels: the accumulator starts at the bias (``Duplicate``); for every
input channel of the pass's groups and every kernel tap whose input row exists, the tap-shifted input row is one
``DataCopyPad`` from GM (the left zero padding as ``leftPadding``, the right edge a shorter count), and each output
channel adds ``weight * row`` with one ``Axpy``; one strided ``DataCopyPad`` writes the pass's rows. A stride along W
loads the span of input columns a tap's outputs read and picks every ``STRIDE_W``-th value with ``Gather``.
Knobs: ``co_tile``, ``buffer_num`` (the input-row queue), ``blocks``, ``w_mode`` (weights read from GM by the
scalar unit, or each pass's copied to UB). A schedule whose buffers do not fit the Unified Buffer has no geometry.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.conv.op import ConvOp, _dims, host_tail, project_parts

UB_BYTES = 196608
CORES = 40  # GetCoreNumAiv() of the emulated 910B
FIELDS = ["batch", "cin", "h", "w", "cout", "ho", "wo", "kh", "kw", "cinPerGroup", "coutPerGroup", "coTile",
          "woTile", "wChunks", "coPasses"]


def render_project(op: ConvOp, knobs: dict[str, Any]) -> tuple[dict[str, str], None, dict[str, int] | None]:
    """The six strings of the direct convolution's operator project and the host's geometry (None: infeasible)."""
    geo = geometry(op, knobs)
    if geo is not None:
        geo = {**geo, "lowering": "vector"}
    tiling_cls = f"{op.op_type}TilingData"
    parts = project_parts(op, FIELDS, tiling_cls, host(op, knobs, tiling_cls), kernel(op, knobs, tiling_cls),
                          "direct convolution on the vector cores")
    return parts, None, geo


def geometry(op: ConvOp, knobs: dict[str, Any], cores: int = CORES, ub: int = UB_BYTES) -> dict[str, int] | None:
    """The host tiling for the task's shapes, or None when the buffers do not fit the Unified Buffer."""
    n, c, h, w, co, ho, wo, kh, kw = _dims(op)
    ct = min(int(knobs["co_tile"]), co)
    bn = int(knobs["buffer_num"])
    wa = -(-wo // 8) * 8
    wub = -(-ct * (c // op.groups) * kh * kw // 8) * 8 if knobs.get("w_mode", "gm") == "ub" else 0
    sw = op.stride[1]
    per_col = bn + ct if sw == 1 else bn * sw + 2 + ct  # strided: input spans, Gather offsets and the gathered row
    wt = min(wa, (ub // 4 - wub - (0 if sw == 1 else 8 * bn)) // per_col // 8 * 8)  # columns per chunk: what fits
    if wt < 8:
        return None
    chunks = -(-wo // wt)
    passes = -(-co // ct)
    items = n * ho * passes * chunks
    cores_used = cores if knobs.get("blocks", "all") == "all" else max(1, cores // 2)
    return {"coTile": ct, "woTile": wt, "wChunks": chunks, "coPasses": passes, "items": items, "blockDim": min(items, cores_used)}


def host(op: ConvOp, knobs: dict[str, Any], tiling_cls: str) -> str:
    (sh, sw), (ph, pw), (dh, dw) = op.stride, op.padding, op.dilation
    nd = op.nd
    shape_read = ("    uint32_t batch = x.GetDim(0), cin = x.GetDim(1), h = x.GetDim(2), w = x.GetDim(3);\n"
                  "    uint32_t cout = wt.GetDim(0), kh = wt.GetDim(2), kw = wt.GetDim(3);\n" if nd == 2 else
                  "    uint32_t batch = x.GetDim(0), cin = x.GetDim(1), h = 1, w = x.GetDim(2);\n"
                  "    uint32_t cout = wt.GetDim(0), kh = 1, kw = wt.GetDim(2);\n")
    return f"""#include "{op.kernel_name}_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

// the module's attributes
constexpr int64_t STRIDE_H = {sh}, STRIDE_W = {sw}, PAD_H = {ph}, PAD_W = {pw}, DIL_H = {dh}, DIL_W = {dw};
constexpr int64_t GROUPS = {op.groups};

namespace optiling {{
constexpr uint32_t CO_TILE = {int(knobs["co_tile"])};
constexpr uint32_t BUFFER_NUM = {int(knobs["buffer_num"])};
constexpr uint32_t HALF_CORES = {0 if knobs.get("blocks", "all") == "all" else 1};
constexpr uint32_t WEIGHTS_IN_UB = {1 if knobs.get("w_mode", "gm") == "ub" else 0};

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{{
    const gert::Shape& x = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& wt = context->GetInputShape(1)->GetStorageShape();
    if (x.GetDimNum() != {nd + 2} || wt.GetDimNum() != {nd + 2}) {{
        return ge::GRAPH_FAILED;
    }}
{shape_read}    if (cin % GROUPS != 0 || cout % GROUPS != 0 || wt.GetDim(1) * GROUPS != cin) {{
        return ge::GRAPH_FAILED;
    }}
    int64_t hoSigned = (static_cast<int64_t>(h) + 2 * PAD_H - DIL_H * (kh - 1) - 1) / STRIDE_H + 1;
    int64_t woSigned = (static_cast<int64_t>(w) + 2 * PAD_W - DIL_W * (kw - 1) - 1) / STRIDE_W + 1;
    if (hoSigned <= 0 || woSigned <= 0) {{
        return ge::GRAPH_FAILED;
    }}
    uint32_t ho = static_cast<uint32_t>(hoSigned), wo = static_cast<uint32_t>(woSigned);
    uint32_t woAligned = (wo + 7) / 8 * 8;  // accumulator rows start on 32-byte blocks
    uint32_t coTile = CO_TILE < cout ? CO_TILE : cout;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint64_t ub = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    uint64_t wElems = WEIGHTS_IN_UB ? (static_cast<uint64_t>(coTile) * (cin / GROUPS) * kh * kw + 7) / 8 * 8 : 0;
    // output columns per chunk: the input-row queue, the accumulator (and the pass's weights) must fit the UB
    // per output column: BUFFER_NUM input values (strided: input spans of STRIDE_W, Gather offsets, the gathered row)
    uint64_t perColumn = STRIDE_W == 1 ? BUFFER_NUM + coTile : BUFFER_NUM * STRIDE_W + 2 + coTile;
    uint64_t fixed = STRIDE_W == 1 ? 0 : 8 * BUFFER_NUM;
    if (wElems + fixed >= ub / sizeof(float)) {{
        return ge::GRAPH_FAILED;
    }}
    uint64_t fit = (ub / sizeof(float) - wElems - fixed) / perColumn / 8 * 8;
    if (fit < 8) {{
        return ge::GRAPH_FAILED;
    }}
    uint32_t woTile = fit < woAligned ? static_cast<uint32_t>(fit) : woAligned;
    uint32_t wChunks = (wo + woTile - 1) / woTile;
    uint32_t coPasses = (cout + coTile - 1) / coTile;
    uint32_t items = batch * ho * coPasses * wChunks;
    uint32_t coreNum = platform.GetCoreNumAiv();
    if (HALF_CORES) coreNum = coreNum / 2 > 0 ? coreNum / 2 : 1;
    context->SetBlockDim(items < coreNum ? items : coreNum);
    {tiling_cls} tiling;
""" + "".join(f"    tiling.set_{f}({f});\n" for f in ("batch", "cin", "h", "w", "cout", "ho", "wo", "kh", "kw")) + \
        """    tiling.set_cinPerGroup(cin / GROUPS);
    tiling.set_coutPerGroup(cout / GROUPS);
    tiling.set_coTile(coTile);
    tiling.set_woTile(woTile);
    tiling.set_wChunks(wChunks);
    tiling.set_coPasses(coPasses);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}

""" + host_tail(op)


def kernel(op: ConvOp, knobs: dict[str, Any], tiling_cls: str) -> str:
    (sh, sw), (ph, pw), (dh, dw) = op.stride, op.padding, op.dilation
    x, wt = op.exts[0].name, op.exts[1].name
    args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts)
    bias_init = f"        biasGm.SetGlobalBuffer((__gm__ float*){op.exts[2].name}, cout);\n" if op.bias else ""
    start = "biasGm.GetValue(co0 + c)" if op.bias else "0.0f"
    text = _kernel_text(op, knobs, tiling_cls, sh, ph, pw, dh, dw, x, wt, args, bias_init, start)
    return text if sw == 1 else _strided(text, sw)


def _strided(text: str, sw: int) -> str:
    """A stride along W: each tap loads the span of input columns its output columns read (one DataCopyPad,
    left zero padding as before) and gathers every STRIDE_W-th value (Gather with byte offsets set up once)."""
    def sub(old: str, new: str) -> None:
        nonlocal text
        assert text.count(old) == 1, old
        text = text.replace(old, new)

    sub("constexpr int32_t STRIDE_H = ", f"constexpr int32_t STRIDE_W = {sw};\nconstexpr int32_t STRIDE_H = ")
    sub("        pipe.InitBuffer(inQueue, BUFFER_NUM, woTile * sizeof(float));\n",
        "        pipe.InitBuffer(inQueue, BUFFER_NUM, ((woTile - 1) * STRIDE_W + 8) / 8 * 8 * sizeof(float));\n"
        "        pipe.InitBuffer(idxBuf, woTile * sizeof(uint32_t));\n"
        "        pipe.InitBuffer(rowBuf, woTile * sizeof(float));\n"
        "        idx = idxBuf.Get<uint32_t>();\n"
        "        for (uint32_t i = 0; i < woTile; ++i) {\n"
        "            idx.SetValue(i, i * STRIDE_W * sizeof(float));  // Gather's byte offsets: every STRIDE_W-th value\n"
        "        }\n"
        "        TEventID evt = GetTPipePtr()->FetchEventID(HardEvent::S_V);  // the offsets are written before use\n"
        "        SetFlag<HardEvent::S_V>(evt);\n"
        "        WaitFlag<HardEvent::S_V>(evt);\n")
    i = text.index("                        // input column of the chunk's first output column")
    j = text.index("                        LocalTensor<float> xr = inQueue.DeQue<float>();\n")
    text = text[:i] + """                        // input column of the chunk's first output column; span[j] = input column off + j
                        int32_t off = static_cast<int32_t>(ow0 * STRIDE_W + s * DIL_W) - PAD_W;
                        int32_t lo = off < 0 ? -off : 0;  // span values left of the input: zero padding
                        int32_t last = static_cast<int32_t>(w) - 1 - off;  // span index of the input's last column
                        if (last < 0) {
                            continue;
                        }
                        int32_t hi = last / STRIDE_W + 1;  // chunk columns that read the input or its left padding
                        if (hi > static_cast<int32_t>(wt)) hi = static_cast<int32_t>(wt);
                        int32_t span = (hi - 1) * STRIDE_W + 1;
                        if (span <= lo) {
                            continue;
                        }
                        CopyRow(((n * cin + ci) * h + ih) * w + (lo + off), lo, span - lo);
""" + text[j:]
    sub("                        LocalTensor<float> xr = inQueue.DeQue<float>();\n",
        "                        LocalTensor<float> xs = inQueue.DeQue<float>();\n"
        "                        LocalTensor<float> xr = rowBuf.Get<float>();\n"
        "                        Gather(xr, xs, idx, 0, static_cast<uint32_t>(hi));  // xr[ow] = span[ow * STRIDE_W]\n")
    sub("                        inQueue.FreeTensor(xr);\n", "                        inQueue.FreeTensor(xs);\n")
    sub("    TQue<TPosition::VECOUT, 1> outQueue;\n",
        "    TQue<TPosition::VECOUT, 1> outQueue;\n    TBuf<TPosition::VECCALC> idxBuf, rowBuf;\n"
        "    LocalTensor<uint32_t> idx;\n")
    return text


def _kernel_text(op: ConvOp, knobs: dict[str, Any], tiling_cls: str, sh: int, ph: int, pw: int, dh: int, dw: int,
                 x: str, wt: str, args: str, bias_init: str, start: str) -> str:
    w_idx = "((co * cinPerGroup + ci - grp * cinPerGroup) * kh + r) * kw + s"
    if knobs.get("w_mode", "gm") == "ub":  # the pass's weights (contiguous in GM) copied into UB once per item
        w_init = "        pipe.InitBuffer(wQueue, 1, (coTile * cinPerGroup * kh * kw + 7) / 8 * 8 * sizeof(float));\n"
        w_load = ("            LocalTensor<float> wLocal = wQueue.AllocTensor<float>();\n"
                  "            DataCopyExtParams wCopy{1, static_cast<uint32_t>(cos * cinPerGroup * kh * kw * sizeof(float)), 0, 0, 0};\n"
                  "            DataCopyPadExtParams<float> wPad{false, 0, 0, 0.0f};\n"
                  "            DataCopyPad(wLocal, wGm[co0 * cinPerGroup * kh * kw], wCopy, wPad);\n"
                  "            wQueue.EnQue(wLocal);\n"
                  "            wLocal = wQueue.DeQue<float>();  // the scalar unit reads the weights from UB\n")
        w_read = f"wLocal.GetValue({w_idx} - co0 * cinPerGroup * kh * kw)"
        w_free = "            wQueue.FreeTensor(wLocal);\n"
        w_member = "    TQue<TPosition::VECIN, 1> wQueue;\n"
    else:  # every weight read from GM by the scalar unit
        w_init = w_load = w_free = w_member = ""
        w_read = f"wGm.GetValue({w_idx})"
    return (_direct_head(sh, ph, pw, dh, dw, args, tiling_cls, x, wt, bias_init, w_init, op, knobs)
            + _direct_process(start, w_load, w_read, w_free)
            + _direct_tail(w_member, args, op))


def _direct_head(sh: Any, ph: Any, pw: Any, dh: Any, dw: Any, args: Any, tiling_cls: Any, x: Any, wt: Any,
                 bias_init: Any, w_init: Any, op: Any, knobs: Any) -> str:
    """The header, the class and its Init."""
    return f"""#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = {int(knobs["buffer_num"])};
constexpr int32_t STRIDE_H = {sh}, PAD_H = {ph}, PAD_W = {pw}, DIL_H = {dh}, DIL_W = {dw};

__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) {{ return a < b ? a : b; }}
__aicore__ inline uint32_t Max(uint32_t a, uint32_t b) {{ return a > b ? a : b; }}

class Kernel{op.op_type} {{
public:
    __aicore__ inline Kernel{op.op_type}() {{}}
    __aicore__ inline void Init({args}, GM_ADDR out, const {tiling_cls}& t)
    {{
        batch = t.batch; cin = t.cin; h = t.h; w = t.w; cout = t.cout; ho = t.ho; wo = t.wo; kh = t.kh; kw = t.kw;
        cinPerGroup = t.cinPerGroup; coutPerGroup = t.coutPerGroup; coTile = t.coTile; woTile = t.woTile;
        wChunks = t.wChunks; coPasses = t.coPasses;
        xGm.SetGlobalBuffer((__gm__ float*){x}, batch * cin * h * w);
        wGm.SetGlobalBuffer((__gm__ float*){wt}, cout * cinPerGroup * kh * kw);
{bias_init}        yGm.SetGlobalBuffer((__gm__ float*)out, batch * cout * ho * wo);
        pipe.InitBuffer(inQueue, BUFFER_NUM, woTile * sizeof(float));
        pipe.InitBuffer(outQueue, 1, coTile * woTile * sizeof(float));
{w_init}    }}
"""


def _direct_process(start: Any, w_load: Any, w_read: Any, w_free: Any) -> str:
    """Process: the units of work, the taps, the Axpys, the rows out."""
    return f"""    __aicore__ inline void Process()
    {{
        // a unit of work: one chunk of woTile columns of an output row (n, oh) for a pass of coTile channels
        for (uint32_t item = GetBlockIdx(); item < batch * ho * coPasses * wChunks; item += GetBlockNum()) {{
            uint32_t chunk = item % wChunks, pass = (item / wChunks) % coPasses, row = item / wChunks / coPasses;
            uint32_t n = row / ho, oh = row % ho;
            uint32_t ow0 = chunk * woTile, wt = Min(woTile, wo - ow0);
            uint32_t co0 = pass * coTile, cos = Min(coTile, cout - co0);
            LocalTensor<float> acc = outQueue.AllocTensor<float>();
            for (uint32_t c = 0; c < cos; ++c) {{
                Duplicate(acc[c * woTile], {start}, static_cast<int32_t>(wt));
            }}
{w_load}            uint32_t gFirst = co0 / coutPerGroup, gLast = (co0 + cos - 1) / coutPerGroup;
            for (uint32_t ci = gFirst * cinPerGroup; ci < (gLast + 1) * cinPerGroup; ++ci) {{
                uint32_t grp = ci / cinPerGroup;
                uint32_t cLo = Max(co0, grp * coutPerGroup), cHi = Min(co0 + cos, (grp + 1) * coutPerGroup);
                for (uint32_t r = 0; r < kh; ++r) {{
                    int32_t ih = static_cast<int32_t>(oh * STRIDE_H + r * DIL_H) - PAD_H;
                    if (ih < 0 || ih >= static_cast<int32_t>(h)) {{
                        continue;  // a padding row: adds nothing
                    }}
                    for (uint32_t s = 0; s < kw; ++s) {{
                        // input column of the chunk's first output column
                        int32_t off = static_cast<int32_t>(ow0 + s * DIL_W) - PAD_W;
                        int32_t lo = off < 0 ? -off : 0;  // chunk columns left of the input: zero padding
                        int32_t hi = static_cast<int32_t>(w) - off;  // chunk columns up to the input's right edge
                        if (hi > static_cast<int32_t>(wt)) hi = static_cast<int32_t>(wt);
                        if (hi <= lo) {{
                            continue;
                        }}
                        CopyRow(((n * cin + ci) * h + ih) * w + (lo + off), lo, hi - lo);
                        LocalTensor<float> xr = inQueue.DeQue<float>();
                        for (uint32_t co = cLo; co < cHi; ++co) {{
                            float wv = {w_read};
                            Axpy(acc[(co - co0) * woTile], xr, wv, hi);  // acc[0, hi) += wv * row
                        }}
                        inQueue.FreeTensor(xr);
                    }}
                }}
            }}
            outQueue.EnQue(acc);
            acc = outQueue.DeQue<float>();
            // cos rows of wt floats (UB rows of woTile) to y[n, co0.., oh, ow0..]
            DataCopyExtParams copy{{static_cast<uint16_t>(cos), static_cast<uint32_t>(wt * sizeof(float)),
                                   static_cast<uint32_t>((woTile - (wt + 7) / 8 * 8) * sizeof(float) / 32),
                                   static_cast<uint32_t>((ho * wo - wt) * sizeof(float)), 0}};
            DataCopyPad(yGm[((n * cout + co0) * ho + oh) * wo + ow0], acc, copy);
            outQueue.FreeTensor(acc);
{w_free}        }}
    }}

"""


def _direct_tail(w_member: Any, args: Any, op: Any) -> str:
    """The input-row copy, the members and the kernel entry."""
    return f"""private:
    __aicore__ inline void CopyRow(uint32_t src, int32_t lo, int32_t count)
    {{
        // count input values to UB [lo, lo + count); [0, lo) is the convolution's left zero padding
        LocalTensor<float> xr = inQueue.AllocTensor<float>();
        DataCopyExtParams copy{{1, static_cast<uint32_t>(count * sizeof(float)), 0, 0, 0}};
        DataCopyPadExtParams<float> pad{{lo > 0, static_cast<uint8_t>(lo), 0, 0.0f}};
        DataCopyPad(xr, xGm[src], copy, pad);
        inQueue.EnQue(xr);
    }}

    TPipe pipe;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueue;
    TQue<TPosition::VECOUT, 1> outQueue;
{w_member}    GlobalTensor<float> xGm, wGm, yGm{", biasGm" if op.bias else ""};
    uint32_t batch = 0, cin = 0, h = 0, w = 0, cout = 0, ho = 0, wo = 0, kh = 0, kw = 0;
    uint32_t cinPerGroup = 0, coutPerGroup = 0, coTile = 0, woTile = 0, wChunks = 0, coPasses = 0;
}};

extern "C" __global__ __aicore__ void {op.kernel_name}({args}, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{{
    GET_TILING_DATA(tiling_data, tiling);
    Kernel{op.op_type} op;
    op.Init({", ".join(e.name for e in op.exts)}, out, tiling_data);
    op.Process();
}}"""

