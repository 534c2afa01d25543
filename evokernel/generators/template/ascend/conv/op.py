"""A convolution as the ``ascend_conv`` family's operator (``ConvOp``), whichever lowering writes it: the task's one
convolution (1-D or 2-D, grouped, depthwise, dilated, strided, float32) with its operands, or AnalysisError naming
what is not templated; and what both lowerings write alike (the host after the TilingFunc, the project strings).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from evokernel.generators.template.ascend.names import _snake, kernel_operands, own_init
from evokernel.generators.template.ascend.project import binding_source, model_source
from evokernel.generators.template.front.graph import AnalysisError, Graph
from evokernel.generators.template.front.lower import Plan


@dataclass
class ConvExt:
    name: str
    pyexpr: str
    root: int


@dataclass
class ConvOp:
    graph: Graph
    snake: str
    nd: int  # 1 or 2
    x_shape: tuple[int, ...]
    w_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    stride: tuple[int, int]  # (sh, sw)
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    exts: list[ConvExt]  # x, weight, then the bias when there is one
    bias: bool
    init_source: str = ""
    input_names: list[str] = field(default_factory=list)
    family: str = "ascend_conv"
    op_class: str = "convolution"
    reduces: list[int] = field(default_factory=list)

    @property
    def rows(self) -> int:  # output rows (n, co, oh)
        return self.out_shape[0] * self.out_shape[1] * (self.out_shape[2] if self.nd == 2 else 1)

    @property
    def N(self) -> int:  # output row length
        return self.out_shape[-1]

    @property
    def op_type(self) -> str:
        return "".join(p.capitalize() for p in (self.snake + "_custom").split("_") if p)

    @property
    def kernel_name(self) -> str:
        return self.snake + "_custom"


def prepare(plan: Plan, task_name: str, task_source: str = "") -> ConvOp:
    """The plan's convolution as one vector operator, or AnalysisError naming what is not templated."""
    g = plan.graph
    if len(plan.stages) != 1 or plan.stages[0].nodes:
        fams = " -> ".join(s.family for s in plan.stages)
        raise AnalysisError(f"a convolution with more after it ({fams}; fused epilogue) is not templated: the "
                            "conv template writes the convolution alone")
    conv = g.nodes[plan.stages[0].anchor]
    if getattr(g, "half", False):
        raise AnalysisError("a float16 convolution is not templated (the vector convolution accumulates float32)")
    a = conv.attrs
    if conv.op == "conv2d":
        nd, stride, padding, dilation, groups = 2, tuple(a["stride"]), tuple(a["padding"]), tuple(a["dilation"]), 1
    elif conv.op == "convnd":
        if a.get("transposed"):
            raise AnalysisError("a transposed convolution is not templated")
        nd = int(a["nd"])
        if nd == 3:
            raise AnalysisError("a 3-D convolution is not templated (1-D and 2-D are)")
        stride, padding, dilation = tuple(a["stride"][1:]), tuple(a["padding"][1:]), tuple(a["dilation"][1:])
        groups = int(a["groups"])
    else:
        raise AnalysisError(f"{conv.op} is not a convolution the conv template writes")
    stride, padding, dilation = (tuple(int(v) for v in t) for t in (stride, padding, dilation))
    if padding[1] > 8:
        raise AnalysisError(f"padding {padding[1]} along W exceeds DataCopyPad's 32-byte left padding")
    x_id, w_id = conv.args[0], conv.args[1]
    b_id = conv.args[2] if len(conv.args) > 2 else None
    root_of = lambda nid: plan.aliases.get(nid, nid)  # noqa: E731
    if root_of(g.output) != plan.stages[0].anchor:
        raise AnalysisError("the output is not the convolution's")
    exts = [ConvExt(*o) for o in kernel_operands(g, (x_id, w_id, b_id), root_of,
                                                 "convolution operands must be float32 inputs or parameters")]
    x_shape = tuple(int(d) for d in g.nodes[x_id].shape)
    w_shape = tuple(int(d) for d in g.nodes[w_id].shape)
    out_shape = tuple(int(d) for d in conv.shape)
    if nd == 1:  # (N, C, L) as a single-row image; the H parameters are the identity
        stride, padding, dilation = (1, stride[-1]), (0, padding[-1]), (1, dilation[-1])
    init_source = g.init_source if (not task_source or own_init(task_source)) else ""
    snake = re.sub(r"_(?=[0-9])", "", _snake(task_name))  # the op type's snake case has no '_' before a digit
    return ConvOp(g, snake, nd, x_shape, w_shape, out_shape, stride, padding, dilation, groups, exts,
                  b_id is not None, init_source, list(g.input_names))


def _dims(op: ConvOp) -> tuple[int, ...]:
    """(batch, cin, h, w, cout, ho, wo, kh, kw) with 1-D as H = 1."""
    if op.nd == 2:
        n, c, h, w = op.x_shape
        co, _, kh, kw = op.w_shape
        ho, wo = op.out_shape[2], op.out_shape[3]
    else:
        n, c, w = op.x_shape
        co, _, kw = op.w_shape
        h = kh = ho = 1
        wo = op.out_shape[2]
    return n, c, h, w, co, ho, wo, kh, kw


def host_tail(op: Any) -> str:
    """The host source after the TilingFunc, the same for both lowerings: InferShape (N, Cout, Ho[, Wo] from the
    module's STRIDE/PAD/DIL constants) and the OpDef (every input and the output float32, ND)."""
    nd = op.nd
    infer_dims = (["    y->SetDimNum(4);", "    y->SetDim(0, x->GetDim(0));", "    y->SetDim(1, wt->GetDim(0));",
                   "    y->SetDim(2, (x->GetDim(2) + 2 * PAD_H - DIL_H * (wt->GetDim(2) - 1) - 1) / STRIDE_H + 1);",
                   "    y->SetDim(3, (x->GetDim(3) + 2 * PAD_W - DIL_W * (wt->GetDim(3) - 1) - 1) / STRIDE_W + 1);"]
                  if nd == 2 else
                  ["    y->SetDimNum(3);", "    y->SetDim(0, x->GetDim(0));", "    y->SetDim(1, wt->GetDim(0));",
                   "    y->SetDim(2, (x->GetDim(2) + 2 * PAD_W - DIL_W * (wt->GetDim(2) - 1) - 1) / STRIDE_W + 1);"])
    inputs = "".join(f'        this->Input("{e.name}").ParamType(REQUIRED).DataType({{ge::DT_FLOAT}}).Format({{ge::FORMAT_ND}});\n'
                     for e in op.exts)
    return """namespace ge {
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{
    const gert::Shape* x = context->GetInputShape(0);
    const gert::Shape* wt = context->GetInputShape(1);
    gert::Shape* y = context->GetOutputShape(0);
""" + "\n".join(infer_dims) + f"""
    return GRAPH_SUCCESS;
}}
}}

namespace ops {{
class {op.op_type} : public OpDef {{
public:
    explicit {op.op_type}(const char* name) : OpDef(name)
    {{
{inputs}        this->Output("out").ParamType(REQUIRED).DataType({{ge::DT_FLOAT}}).Format({{ge::FORMAT_ND}});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }}
}};
OP_ADD({op.op_type});
}}"""


def project_parts(op: ConvOp, fields: list[str], tiling_cls: str, host: str, kernel: str, doc: str) -> dict[str, str]:
    """The six strings of a convolution's operator project (either lowering): the tiling struct of ``fields``,
    the op JSON, the binding that allocates the NCHW/NCL output, ModelNew."""
    tiling = "\n".join(['#include "register/tilingdata_base.h"', "", "namespace optiling {",
                        f"BEGIN_TILING_DATA_DEF({tiling_cls})"] +
                       [f"  TILING_DATA_FIELD_DEF(uint32_t, {f});" for f in fields] +
                       ["END_TILING_DATA_DEF;", "", f"REGISTER_TILING_DATA_CLASS({op.op_type}, {tiling_cls})", "}"])
    desc = [{"op": op.op_type, "language": "cpp",
             "input_desc": [{"name": e.name, "param_type": "required", "format": ["ND"], "type": ["float"]}
                            for e in op.exts],
             "output_desc": [{"name": "out", "param_type": "required", "format": ["ND"], "type": ["float"]}]}]
    x, wt = op.exts[0].name, op.exts[1].name
    (sh, sw), (ph, pw), (dh, dw) = op.stride, op.padding, op.dilation
    if op.nd == 2:
        sizes = (f"{x}.size(0), {wt}.size(0), ({x}.size(2) + {2 * ph} - {dh} * ({wt}.size(2) - 1) - 1) / {sh} + 1, "
                 f"({x}.size(3) + {2 * pw} - {dw} * ({wt}.size(3) - 1) - 1) / {sw} + 1")
    else:
        sizes = f"{x}.size(0), {wt}.size(0), ({x}.size(2) + {2 * pw} - {dw} * ({wt}.size(2) - 1) - 1) / {sw} + 1"
    alloc = f"at::Tensor result = at::empty({{{sizes}}}, {x}.options());"
    params = ", ".join(f"const at::Tensor& {e.name}" for e in op.exts)
    bind = binding_source(op.kernel_name, op.op_type, params, alloc, ", ".join(e.name for e in op.exts), doc)
    model = model_source(op.init_source, op.input_names, op.kernel_name, ", ".join(e.pyexpr for e in op.exts))
    return {"project_json_src": json.dumps(desc, indent=4), "host_tiling_src": tiling, "host_operator_src": host,
            "kernel_src": kernel, "python_bind_src": bind, "model_src": model}
