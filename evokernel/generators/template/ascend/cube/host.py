"""The cube family's host: the tiling struct's fields and the TilingFunc (mirroring :mod:`.geometry`), InferShape and
the OpDef, with what the row program (:mod:`.rows`), the batch (:mod:`..gemm.batch`) and split-K (:mod:`.splitk`)
add; and the binding's allocation of the result.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.cube import cols as COLS
from evokernel.generators.template.ascend.cube import rows as ROWS
from evokernel.generators.template.ascend.cube import splitk as SPLITK
from evokernel.generators.template.ascend.gemm import batch as BATCH
from evokernel.generators.template.ascend.gemm.op import CubeOp


def b_dims(op: CubeOp) -> tuple[str, str]:
    """The dims of b that hold K and N."""
    return ("1", "0") if op.trans_b else ("0", "1")


def tiling_source(op: CubeOp, knobs: dict[str, Any], rg: Any, split: int, tiling_cls: str) -> str:
    """host_tiling_src: the tiling struct (the GEMM's fields, the row program's, the batch, split-K's)."""
    fields = ["M", "N", "K", "baseM", "baseN", "baseK", "tilesM", "tilesN"]
    if rg is not None:
        fields += ROWS.ROW_FIELDS
    if op.batch != 1:
        fields.append("batch")
    if split > 1:
        fields += SPLITK.tiling_fields(op, knobs)
    return "\n".join(['#include "register/tilingdata_base.h"', "", "namespace optiling {",
                      f"BEGIN_TILING_DATA_DEF({tiling_cls})"] +
                     [f"  TILING_DATA_FIELD_DEF(uint32_t, {f});" for f in fields] +
                     ["END_TILING_DATA_DEF;", "", f"REGISTER_TILING_DATA_CLASS({op.op_type}, {tiling_cls})", "}"])


def host_source(op: CubeOp, knobs: dict[str, Any], rg: Any, split: int, tiling_cls: str) -> str:
    """host_operator_src: TilingFunc, InferShape and the OpDef."""
    host = _host(op, knobs, rg, tiling_cls)
    b_rows, b_cols = b_dims(op)
    if op.batch != 1:
        host = BATCH.batch_host(op, host, b_rows, b_cols)
    if split > 1:
        host = SPLITK.splitk_host(op, knobs, host, split)
    return host


def result_alloc(op: CubeOp, knobs: dict[str, Any], rg: Any, split: int) -> str:
    """The binding's allocation of the result (zero-filled when split-K's ranges add into it)."""
    a, b = op.exts[0].name, op.exts[1].name
    b_cols = b_dims(op)[1]
    n_expr = f"{b}.size({b_cols})"
    alloc = f"at::Tensor result = at::empty({{{a}.size(0), {n_expr}}}, {a}.options());"
    if rg is not None:
        alloc = f"at::Tensor result = at::empty({{{', '.join(str(d) for d in op.out_shape)}}}, {a}.options());"
    if op.batch != 1:
        alloc = BATCH.batch_alloc(op, a, b, b_cols)
    if split > 1 and SPLITK.mode(op, knobs) == "atomic":
        alloc = alloc.replace("at::empty(", "at::zeros(") + "  // split-K: the K ranges add into it"
    return alloc


def _host(op: CubeOp, knobs: dict[str, Any], rg: Any, tiling_cls: str) -> str:
    ge_dt = "ge::DT_FLOAT16" if op.half else "ge::DT_FLOAT"
    b_rows, b_cols = b_dims(op)
    return f"""#include "{op.kernel_name}_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {{
constexpr uint32_t BASE_M = {int(knobs["base_m"])};
constexpr uint32_t BASE_N = {int(knobs["base_n"])};
constexpr uint32_t BASE_K = {int(knobs["base_k"])};
{_row_consts(op, rg)}
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{{
    const gert::Shape& a = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& b = context->GetInputShape(1)->GetStorageShape();
    if (a.GetDimNum() != 2 || b.GetDimNum() != 2 || a.GetDim(1) != b.GetDim({b_rows})) {{
        return ge::GRAPH_FAILED;
    }}
    uint32_t M = a.GetDim(0), K = a.GetDim(1), N = b.GetDim({b_cols});
    if (N % 16 != 0) {{
        return ge::GRAPH_FAILED;  // Fixpipe moves whole 16-column blocks
    }}
{_row_check(rg)}    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t cubeCores = platform.GetCoreNumAic();
    uint32_t tilesM = (M + BASE_M - 1) / BASE_M;
    uint32_t tilesN = (N + BASE_N - 1) / BASE_N;
    uint32_t tiles = {"tilesM;  // a block's work: a row block of all N (the vector cores reduce whole rows)" if rg and knobs.get("row_split", "block") == "block" else "tilesM * tilesN;"}
    {tiling_cls} tiling;
""" + "".join(f"    tiling.set_{f}({v});\n" for f, v in
              (("M", "M"), ("N", "N"), ("K", "K"), ("baseM", "BASE_M"), ("baseN", "BASE_N"), ("baseK", "BASE_K"),
               ("tilesM", "tilesM"), ("tilesN", "tilesN"))) + _row_sets(rg) + f"""    context->SetBlockDim(tiles < cubeCores ? tiles : cubeCores);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = {_workspace(op, rg is not None, str(knobs.get("row_split", "block")))};
    return ge::GRAPH_SUCCESS;
}}
}}

namespace ge {{
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{{
    gert::Shape* y = context->GetOutputShape(0);
{_infer(op, b_cols)}
    return GRAPH_SUCCESS;
}}
}}

namespace ops {{
class {op.op_type} : public OpDef {{
public:
    explicit {op.op_type}(const char* name) : OpDef(name)
    {{
""" + "".join(f'        this->Input("{e.name}").ParamType(REQUIRED).DataType({{{ge_dt}}}).Format({{ge::FORMAT_ND}});\n'
              for e in op.exts) + f"""        this->Output("out").ParamType(REQUIRED).DataType({{{ge_dt}}}).Format({{ge::FORMAT_ND}});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }}
}};
OP_ADD({op.op_type});
}}"""


def _row_consts(op: CubeOp, rg: Any) -> str:
    if rg is None:
        return ""
    return ROWS.row_constants(rg[3], 16 if op.half else 8, op.N)


def _row_check(rg: Any) -> str:
    if rg is None:
        return ""
    return ("    if (N != ROW_N) {\n        return ge::GRAPH_FAILED;  // the row program's tiles were sized for "
            "N = ROW_N\n    }\n")


def _row_sets(rg: Any) -> str:
    if rg is None:
        return ""
    return ROWS.host_row_fields()


def _workspace(op: CubeOp, rows: bool, split: str = "block") -> str:
    if rows and split == "all":  # the whole of C (the task's dtype), + a BatchNorm's statistics
        return f"static_cast<size_t>(M) * N * sizeof({'half' if op.half else 'float'}){COLS.workspace_extra(op)};  // MIX: C, whole"
    if rows:  # a row block of C (all N, the task's dtype) per AI core
        return ("static_cast<size_t>(tiles < cubeCores ? tiles : cubeCores) * BASE_M * N * "
                f"sizeof({'half' if op.half else 'float'});  // MIX: one row block of C per AI core")
    if op.mix:
        return ("static_cast<size_t>(tiles < cubeCores ? tiles : cubeCores) * BASE_M * BASE_N * sizeof(float);"
                "  // MIX: one float tile per AI core")
    return "0;"


def _infer(op: CubeOp, b_cols: str) -> str:
    if op.row_op is None:
        return ("    y->SetDimNum(2);\n    y->SetDim(0, context->GetInputShape(0)->GetDim(0));\n"
                f"    y->SetDim(1, context->GetInputShape(1)->GetDim({b_cols}));")
    dims = [f"    y->SetDimNum({len(op.out_shape)});"]
    for k, d in enumerate(op.out_shape):
        dims.append(f"    y->SetDim({k}, " + ("context->GetInputShape(0)->GetDim(0)" if k == 0 else str(d)) + ");")
    return "\n".join(dims)
