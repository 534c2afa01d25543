"""The cube lowering of a dense convolution (``ascend_conv`` with ``lowering = cube``): an implicit GEMM per batch image.

For image ``n``, ``out[n]`` (Cout x Ho*Wo) = ``W`` (Cout x Cin*KH*KW) @ ``col[n]`` (Cin*KH*KW x Ho*Wo), where row
``(ci, kh, kw)`` of ``col[n]`` holds, for every output pixel ``(oh, ow)``, the input value that tap reads
(zero in the padding). The kernel is a MIX kernel (one cube core and two vector cores per AI core):

1. **im2col on the vector cores** (:mod:`.im2col`). A unit of work is one row ``(n, ci, kh, kw)`` of ``col`` for a chunk of
   output rows. The output rows whose input row exists form one range; their input rows are ``STRIDE_H * W``
   apart in GM, so one ``DataCopyPad`` brings all of them into the UB, each landing on its own 32-byte
   aligned row of ``ceil8(Wo)`` floats with the tap's left zero padding as ``leftPadding`` and its right one as
   ``rightPadding`` (both at most 8 floats: the W padding is at most 8); one ``DataCopyPad`` writes them out,
   packed, into ``col`` (rows of ``Np`` = Ho*Wo rounded up to 16 floats, in a GM workspace). The rows above and
   below the image are written from a zeroed UB buffer. With a bias, ``col`` gets a last row of ones and the
   weights a last column holding the bias (``W'``, Cout x (K+1), built in the workspace by one vector core:
   the weight rows copied into UB, the bias values set by the scalar unit, the rows copied back), so the
   GEMM adds the bias itself.
2. ``SyncAll<false>()`` over cube and vector cores: ``col`` and ``W'`` are complete before the cube reads them.
3. **The GEMM on the cube cores**, as the cube unit's GEMM (:mod:`..gemm.kernel`) writes it, batched over the images
   (:mod:`..gemm.batch`, with the weights shared by every image): ``base_m x base_n`` tiles of
   ``out[n]``, K in ``base_k`` steps, float32 B (``col``, K x N row-major) through ``LoadDataWithTranspose``.
4. The Fixpipe writes whole 16-column blocks (``nSize`` is documented as a multiple of 16): when Ho*Wo is one,
   the tiles go straight into the NCHW output; otherwise into a padded C in the workspace, and after a
   second ``SyncAll<false>()`` the vector cores copy its rows (``DataCopyPad`` with a source gap) into the output.

A pointwise convolution (1 x 1, stride 1, no padding) without bias whose Ho*Wo is a multiple of 16 needs no
im2col: ``x[n]`` (Cin x H*W) is ``col[n]``, and the kernel is the cube template's batched matmul (cube only).

A stride along H only picks other input rows; a stride along W copies each output row's input span
(``(Wo - 1) * STRIDE_W + 1`` columns, padding included) the same way and picks every ``STRIDE_W``-th value with one
``Gather`` per row (byte offsets written once by the scalar unit) before the copy into ``col``.

Applies to: groups == 1, any stride and dilation, W padding up to 8 (as the vector lowering), rows that fit the
UB, Ho*Wo up to 65535. Grouped / depthwise convolutions stay on the vector lowering (:mod:`.direct`).
Knobs: ``base_m``, ``base_n``, ``base_k``, ``buffer_num`` (the cube's L1/L0 buffering and the vector cores'
row queue). Not done here: L1-resident weights,
overlapping the im2col with the GEMM. The convolution through LoadData 3D (the map in L1 as NC1HWC0, per-AI-core
flags instead of the barrier) is :mod:`.l1_img2col` (``conv_algo = l1_img2col``), which the draft takes where its
model beats this one's.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.conv.gemm_shape import FILL, MARGIN, UB_FLOATS, _ceil, _ci_rows, _shape
from evokernel.generators.template.ascend.conv.im2col import vector_class
from evokernel.generators.template.ascend.conv.op import host_tail, project_parts
from evokernel.generators.template.ascend.gemm import batch as BATCH
from evokernel.generators.template.ascend.gemm import geometry as GEMM
from evokernel.generators.template.ascend.gemm import kernel as KERNEL
from evokernel.generators.template.ascend.gemm.op import CUBE_CORES, CubeExt, CubeOp

FIELDS = ["batch", "cin", "h", "w", "cout", "ho", "wo", "kh", "kw", "M", "N", "K", "baseM", "baseN", "baseK",
          "tilesM", "tilesN", "P", "Np", "kc", "wa", "rowsPerChunk", "ohChunks", "rowsW", "outPiece", "outRows",
          "copyOut", "spanA"]


def applies(op: Any) -> str:
    """'' when the cube lowering applies to the convolution, else why not."""
    if op.groups != 1:
        return "a grouped or depthwise convolution (the implicit GEMM is dense)"
    if _shape(op)["Np"] > 65535:
        return "Ho*Wo over 65535 (the GEMM's N is Nd2NzParams' 16-bit srcDValue)"
    return ""


def _cube_knobs(knobs: dict[str, Any]) -> dict[str, Any]:
    """The GEMM's knobs: the tile knobs given (nothing of the cube family's variants: no split-K, A per tile)."""
    return {k: knobs[k] for k in ("base_m", "base_n", "base_k", "buffer_num")}


def _cube_op(op: Any, s: dict[str, int]) -> Any:
    """The GEMM as the cube template's operator: M = Cout, K = Cin*KH*KW (+1 with the bias), N = Ho*Wo (padded to
    16 when C goes through the workspace), one batch entry per image."""
    return CubeOp(op.graph, op.snake, s["cout"], s["K"], s["Np"] if s["copyOut"] else s["P"], False, False,
                       [CubeExt("wMat", "", -1), CubeExt("colMat", "", -2)], False, False,
                       (s["batch"], s["cout"], s["P"]), batch=s["batch"])


def gemm_op(op: Any) -> Any:
    """The convolution's GEMM as the cube template's operator (for the draft's modelled base block)."""
    return _cube_op(op, _shape(op))


def geometry(op: Any, knobs: dict[str, Any]) -> dict[str, int] | None:
    """The host tiling (mirrors TilingFunc), or None when the cube's buffers or a UB row do not fit."""
    s = _shape(op)
    cube = GEMM.geometry(_cube_op(op, s), _cube_knobs(knobs))
    if cube is None:
        return None
    bn = int(knobs["buffer_num"])
    sw = op.stride[1]
    per = (UB_FLOATS - 2 * FILL - (_ceil(s["cout"], 8) if op.bias else 0) - MARGIN
           - (_ceil(s["wo"], 8) if sw > 1 else 0)) // bn
    wa = _ceil(s["wo"], 8)
    dim = s["cin"] if _ci_rows(op) else s["ho"]  # 1-D: a copy's rows are input channels; 2-D: output rows
    span_a = _ceil((s["wo"] - 1) * sw + 1, 8)
    if sw > 1:  # half the UB for the input spans and their gathered rows, half for the copy-out and W'
        per //= 2
    rows = min(dim, per // (wa + (span_a if sw > 1 else 0)), 4095)
    rows_w = min(s["cout"], per // _ceil(s["kc"] + 1, 8)) if op.bias else 0
    if (s["im2col"] and rows < 1) or (op.bias and rows_w < 1):
        return None
    piece = min(_ceil(s["P"], 8), per // 8 * 8)
    out_rows = min(s["batch"] * s["cout"], per // piece, 4095)
    mix = bool(s["im2col"] or s["copyOut"])
    geo = {**{k: v for k, v in s.items()}, **cube, "wa": wa, "rowsPerChunk": max(rows, 1),
           "ohChunks": -(-dim // max(rows, 1)), "rowsW": rows_w, "outPiece": piece, "outRows": out_rows,
           "lowering": "cube", "mix": int(mix), "spanA": span_a}
    if mix:
        geo["blockDim"] = CUBE_CORES  # every AI core: 40 vector cores for the im2col and the copy-out
    return geo


def _host(op: Any, knobs: dict[str, Any], tiling_cls: str, s: dict[str, int], mix: bool) -> str:
    (sh, sw), (ph, pw), (dh, dw) = op.stride, op.padding, op.dilation
    nd = op.nd
    shape_read = ("    uint32_t batch = x.GetDim(0), cin = x.GetDim(1), h = x.GetDim(2), w = x.GetDim(3);\n"
                  "    uint32_t cout = wt.GetDim(0), kh = wt.GetDim(2), kw = wt.GetDim(3);\n" if nd == 2 else
                  "    uint32_t batch = x.GetDim(0), cin = x.GetDim(1), h = 1, w = x.GetDim(2);\n"
                  "    uint32_t cout = wt.GetDim(0), kh = 1, kw = wt.GetDim(2);\n")
    bias = 1 if op.bias else 0
    direct_check = "" if s["im2col"] else """    if (kh != 1 || kw != 1 || (ho * wo) % 16 != 0) {
        return ge::GRAPH_FAILED;  // the kernel multiplies x itself (no im2col): pointwise, Ho*Wo a multiple of 16
    }
"""
    sets = "".join(f"    tiling.set_{f}({f});\n" for f in FIELDS)
    return (_host_consts(sh, sw, ph, pw, dh, dw, bias, op, knobs)
            + _host_shapes(shape_read, direct_check, nd)
            + _host_chunks(UB_FLOATS, tiling_cls, sets, s, mix, _ci_rows, op)) + host_tail(op)


def _host_consts(sh: Any, sw: Any, ph: Any, pw: Any, dh: Any, dw: Any, bias: Any, op: Any, knobs: Any) -> str:
    """The includes and the module's constants."""
    return f"""#include "{op.kernel_name}_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

// the module's attributes
constexpr int64_t STRIDE_H = {sh}, STRIDE_W = {sw}, PAD_H = {ph}, PAD_W = {pw}, DIL_H = {dh}, DIL_W = {dw};

namespace optiling {{
constexpr uint32_t BASE_M = {int(knobs["base_m"])};
constexpr uint32_t BASE_N = {int(knobs["base_n"])};
constexpr uint32_t BASE_K = {int(knobs["base_k"])};
constexpr uint32_t BUFFER_NUM = {int(knobs["buffer_num"])};
constexpr uint32_t HAS_BIAS = {bias};
constexpr uint32_t FILL = {FILL};    // floats of the zero and the ones rows kept in UB
constexpr uint32_t MARGIN = {MARGIN};

"""


def _host_shapes(shape_read: Any, direct_check: Any, nd: Any) -> str:
    """TilingFunc: the shapes read and checked, the GEMM per image."""
    return f"""static ge::graphStatus TilingFunc(gert::TilingContext* context)
{{
    const gert::Shape& x = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& wt = context->GetInputShape(1)->GetStorageShape();
    if (x.GetDimNum() != {nd + 2} || wt.GetDimNum() != {nd + 2}) {{
        return ge::GRAPH_FAILED;
    }}
{shape_read}    if (wt.GetDim(1) != cin || PAD_W > 8 || STRIDE_W > 255) {{
        return ge::GRAPH_FAILED;  // dense only; DataCopyPad pads at most 32 bytes
    }}
    int64_t hoSigned = (static_cast<int64_t>(h) + 2 * PAD_H - DIL_H * (kh - 1) - 1) / STRIDE_H + 1;
    int64_t woSigned = (static_cast<int64_t>(w) + 2 * PAD_W - DIL_W * (kw - 1) - 1) / STRIDE_W + 1;
    if (hoSigned <= 0 || woSigned <= 0) {{
        return ge::GRAPH_FAILED;
    }}
    uint32_t ho = static_cast<uint32_t>(hoSigned), wo = static_cast<uint32_t>(woSigned);
{direct_check}    // the GEMM per image: out[n] (M = cout x N = ho * wo) = W (M x K) @ col[n] (K x N); the bias as a last K row
    uint32_t P = ho * wo, Np = (P + 15) / 16 * 16, kc = cin * kh * kw;
    uint32_t copyOut = P % 16 != 0 ? 1 : 0;  // Fixpipe writes 16-column blocks: a padded C in the workspace
    uint32_t M = cout, K = kc + HAS_BIAS, N = copyOut ? Np : P;
    uint32_t baseM = BASE_M, baseN = BASE_N, baseK = BASE_K;
    uint32_t tilesM = (M + BASE_M - 1) / BASE_M, tilesN = (N + BASE_N - 1) / BASE_N;
"""


def _host_chunks(UB_FLOATS: Any, tiling_cls: Any, sets: Any, s: Any, mix: Any, _ci_rows: Any, op: Any) -> str:
    """TilingFunc: the vector cores' chunks, the workspace, the tiling set; then InferShape and the OpDef."""
    return f"""    // the vector cores' UB: BUFFER_NUM row buffers, the zero and ones rows, the bias
    uint64_t biasFloats = HAS_BIAS ? (cout + 7) / 8 * 8 : 0;
    uint32_t wa = (wo + 7) / 8 * 8;
    uint32_t spanA = ((wo - 1) * STRIDE_W + 1 + 7) / 8 * 8;  // input columns a strided output row reads
    uint64_t per = ({UB_FLOATS} - 2 * FILL - biasFloats - MARGIN - (STRIDE_W > 1 ? wa : 0)) / BUFFER_NUM;
    if (STRIDE_W > 1) per /= 2;  // input spans + gathered rows; the copy-out and W'
    uint32_t rowsDim = {"cin;  // a copy's rows: input channels (1-D)" if _ci_rows(op) else "ho;  // a copy's rows: output rows"}
    uint64_t rows = per / (wa + (STRIDE_W > 1 ? spanA : 0));
    if (rows > rowsDim) rows = rowsDim;
    if (rows > 4095) rows = 4095;
    uint64_t rowsWide = per / ((kc + 1 + 7) / 8 * 8);
    uint32_t rowsW = HAS_BIAS ? static_cast<uint32_t>(rowsWide < cout ? rowsWide : cout) : 0;
    if ((rows < 1 && {s["im2col"]}) || (HAS_BIAS && rowsW < 1)) {{
        return ge::GRAPH_FAILED;  // an output row (or a weight row) does not fit the UB
    }}
    uint32_t rowsPerChunk = rows < 1 ? 1 : static_cast<uint32_t>(rows);
    uint32_t ohChunks = (rowsDim + rowsPerChunk - 1) / rowsPerChunk;
    uint32_t outPiece = static_cast<uint32_t>((P + 7) / 8 * 8 < per / 8 * 8 ? (P + 7) / 8 * 8 : per / 8 * 8);
    uint64_t outRowsWide = per / outPiece;
    uint64_t allRows = static_cast<uint64_t>(batch) * cout;
    uint32_t outRows = static_cast<uint32_t>(outRowsWide < allRows ? outRowsWide : allRows);
    if (outRows > 4095) outRows = 4095;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t cubeCores = platform.GetCoreNumAic();
    uint32_t tiles = batch * tilesM * tilesN;
    context->SetBlockDim({"cubeCores);  // MIX: every AI core (its two vector cores do the im2col)" if mix else "tiles < cubeCores ? tiles : cubeCores);"}
    {tiling_cls} tiling;
{sets}    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    // col (batch x K x Np), W with the bias column (cout x K), C padded (batch x cout x Np), each 64-float aligned
    uint64_t colFloats = {"static_cast<uint64_t>(batch) * K * Np" if s["im2col"] else "0"};
    uint64_t wFloats = HAS_BIAS ? static_cast<uint64_t>(cout) * K : 0;
    uint64_t cFloats = copyOut ? static_cast<uint64_t>(batch) * cout * Np : 0;
    workspace[0] = ((colFloats + 63) / 64 * 64 + (wFloats + 63) / 64 * 64 + cFloats) * sizeof(float);
    return ge::GRAPH_SUCCESS;
}}
}}

"""



def _sub(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _cube_class(op: Any, knobs: dict[str, Any], tiling_cls: str, s: dict[str, int]) -> str:
    """The cube template's batched GEMM class: A = the weights (shared by every image), B = col[n], C = out[n]."""
    cop = _cube_op(op, s)
    # batched over the images (gemm/batch.py); one image too: the batched form all the same (the tiling has the count)
    text = BATCH.batch_kernel(cop, KERNEL.kernel(cop, _cube_knobs(knobs), "float", tiling_cls), "float", tiling_cls)
    text = _sub(text, "        aGm.SetGlobalBuffer((__gm__ float*)wMat, batch * M * K);\n",
                "        aGm.SetGlobalBuffer((__gm__ float*)wMat, M * K);  // the weights: one matrix for every image\n")
    text = _sub(text, "            aOff = entry * M * K;\n", "            aOff = 0;\n")
    return text


def _kernel(op: Any, knobs: dict[str, Any], tiling_cls: str, s: dict[str, int]) -> str:
    cube = _cube_class(op, knobs, tiling_cls, s)
    i = cube.index('extern "C" __global__ __aicore__ void')
    body = cube[:i]
    args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts)
    x, wt = op.exts[0].name, op.exts[1].name
    cls = f"Kernel{op.op_type}"
    if not (s["im2col"] or s["copyOut"]):  # pointwise: x[n] is col[n]; the cube template's batched matmul
        return body + f"""extern "C" __global__ __aicore__ void {op.kernel_name}({args}, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GET_TILING_DATA(tiling_data, tiling);
    {cls} op;
    op.Init({wt}, {x}, out, tiling_data);  // A = the weights (cout x cin), B = x[n] (cin x h * w), C = out[n]
    op.Process();
}}"""
    vec = vector_class(op, tiling_cls, s)
    if op.bias:
        a_addr = "workspace + ((static_cast<uint64_t>(t.batch) * t.K * t.Np + 63) / 64 * 64) * sizeof(float)"
    else:
        a_addr = f"{wt}"
    b_addr = "workspace" if s["im2col"] else x
    c_addr = ("workspace + ((static_cast<uint64_t>(t.batch) * t.K * t.Np + 63) / 64 * 64 + "
              + ("(static_cast<uint64_t>(t.cout) * t.K + 63) / 64 * 64" if op.bias else "0") + ") * sizeof(float)")
    im2col = "        op.Im2col();\n" if s["im2col"] else ""
    return body + vec + f"""
extern "C" __global__ __aicore__ void {op.kernel_name}({args}, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // per block: the cube core and two vector cores
    GET_TILING_DATA(t, tiling);
    if ASCEND_IS_AIC {{
        GM_ADDR wMat = {a_addr};  // A: the weights{" with the bias column (W')" if op.bias else ""}
        GM_ADDR colMat = {b_addr};  // B: {"col" if s["im2col"] else "x[n] is col[n]"}
        GM_ADDR cMat = t.copyOut ? {c_addr} : out;  // C: rows padded to Np in the workspace, or the output
        SyncAll<false>();  // col (and W') written by the vector cores
        {cls} op;
        op.Init(wMat, colMat, cMat, t);
        op.Process();
        if (t.copyOut) {{
            SyncAll<false>();  // every tile of C is in the workspace
        }}
    }} else {{
        KernelIm2col{op.op_type} op;
        op.Init({", ".join(e.name for e in op.exts)}, out, workspace, t);
{im2col}        SyncAll<false>();  // col is complete: the cube cores may multiply
        if (t.copyOut) {{
            SyncAll<false>();  // C is complete: copy its rows into the output
            op.CopyOut();
        }}
    }}
}}"""


def render_project(op: Any, knobs: dict[str, Any]) -> tuple[dict[str, str], None, dict[str, int] | None]:
    """The six strings of the cube-lowered operator project and the host's geometry (None: infeasible)."""
    s = _shape(op)
    geo = geometry(op, knobs)
    mix = bool(s["im2col"] or s["copyOut"])
    tiling_cls = f"{op.op_type}TilingData"
    parts = project_parts(op, FIELDS, tiling_cls, _host(op, knobs, tiling_cls, s, mix),
                               _kernel(op, knobs, tiling_cls, s), "convolution as an implicit GEMM on the cube unit")
    return parts, None, geo
