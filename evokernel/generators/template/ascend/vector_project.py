"""The operator project of a vector family (``ascend_elementwise``, ``ascend_row``, ``ascend_colreduce``): the kernel
entry around the family's kernel class, the tiling struct of its fields, the host (its TilingFunc, InferShape, the
OpDef), the op JSON, the binding and ModelNew. A family supplies what differs: its kernel writer, the tiling
struct's fields, its geometry and its TilingFunc.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from evokernel.generators.template.ascend.project import binding_source, model_source
from evokernel.generators.template.ascend.row_compute import Consts
from evokernel.generators.template.ascend.rowop import AscendOp

Geometry = Callable[[AscendOp, dict[str, Any], Consts], "dict[str, int] | None"]
Host = Callable[[AscendOp, dict[str, Any], Consts, str], str]


def render_project(op: AscendOp, knobs: dict[str, Any], writer: Any, fields: list[tuple[str, str]],
                   geometry: Geometry, host: Host) -> tuple[dict[str, str], Consts, dict[str, int] | None]:
    """The six strings of a vector family's operator project, the buffer counts and the host's geometry:
    ``writer.render(cls, tiling_cls)`` -> (kernel class, Consts), ``fields`` (name, comment) of the tiling struct,
    ``geometry(op, knobs, consts)`` and ``host(op, knobs, consts, tiling_cls)`` (the TilingFunc) of the family."""
    tiling_cls = f"{op.op_type}TilingData"
    cls = f"Kernel{op.op_type}"
    kclass, consts = writer.render(cls, tiling_cls)
    geo = geometry(op, knobs, consts)
    args = ", ".join(e.name for e in op.exts)
    gm_args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts)
    kernel = "\n".join([
        '#include "kernel_operator.h"',
        "using namespace AscendC;",
        "",
        f"constexpr int32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        "",
        kclass,
        "",
        f'extern "C" __global__ __aicore__ void {op.kernel_name}({gm_args}, GM_ADDR out, GM_ADDR workspace, '
        "GM_ADDR tiling)",
        "{",
        "    GET_TILING_DATA(tiling_data, tiling);",
        f"    {cls} op;",
        f"    op.Init({args}, out, tiling_data);",
        "    op.Process();",
        "}"])
    host_core = host(op, knobs, consts, tiling_cls)
    tiling = "\n".join(['#include "register/tilingdata_base.h"', "", "namespace optiling {",
                        f"BEGIN_TILING_DATA_DEF({tiling_cls})"] +
                       [f"  TILING_DATA_FIELD_DEF(uint32_t, {f});" + (f"  // {c}" if c else "") for f, c in fields] +
                       ["END_TILING_DATA_DEF;", "", f"REGISTER_TILING_DATA_CLASS({op.op_type}, {tiling_cls})", "}"])
    host = "\n".join([f'#include "{op.kernel_name}_tiling.h"', '#include "register/op_def_registry.h"',
                      '#include "tiling/platform/platform_ascendc.h"', "", host_core, ""] + _infer_shape(op) + [""] +
                     _opdef(op))
    ty = "float16" if getattr(op.graph, "half", False) else "float"
    desc = [{"op": op.op_type, "language": "cpp",
             "input_desc": [{"name": e.name, "param_type": "required", "format": ["ND"], "type": [ty]}
                            for e in op.exts],
             "output_desc": [{"name": "out", "param_type": "required", "format": ["ND"], "type": [ty]}]}]
    project_json = json.dumps(desc, indent=4)
    # binding
    fe = op.exts[op.frame_ext] if op.frame_ext >= 0 else None
    first = op.exts[0].name
    if op.out_kind == "G":  # blocks add their partial sums into it
        alloc = f"at::Tensor result = at::zeros({{{', '.join(str(d) for d in op.out_shape)}}}, {first}.options());"
    elif fe is not None and list(op.out_shape) == list(op.graph.nodes[fe.root].shape):
        alloc = f"at::Tensor result = at::empty_like({fe.name});"
    else:
        alloc = f"at::Tensor result = at::empty({{{', '.join(str(d) for d in op.out_shape)}}}, {first}.options());"
    params = ", ".join(f"const at::Tensor& {e.name}" for e in op.exts)
    bind = binding_source(op.kernel_name, op.op_type, params, alloc, args, f"{op.op_class} ({op.family})")
    model = model_source(op.init_source, op.graph.input_names, op.kernel_name,
                         ", ".join(e.pyexpr for e in op.exts))
    parts = {"project_json_src": project_json, "host_tiling_src": tiling, "host_operator_src": host,
             "kernel_src": kernel, "python_bind_src": bind, "model_src": model}
    return parts, consts, geo


def _infer_shape(op: AscendOp) -> list[str]:
    out = list(op.out_shape)
    fe = op.exts[op.frame_ext] if op.frame_ext >= 0 else None
    fshape = list(op.graph.nodes[fe.root].shape) if fe else None
    body = ["namespace ge {", "static ge::graphStatus InferShape(gert::InferShapeContext* context)", "{"]
    if fe is not None and out == fshape:
        body.append(f"    *context->GetOutputShape(0) = *context->GetInputShape({op.frame_ext});")
    elif fe is not None and fshape and out == fshape[:-1] + [1]:
        body += [f"    *context->GetOutputShape(0) = *context->GetInputShape({op.frame_ext});",
                 "    gert::Shape* y = context->GetOutputShape(0);",
                 "    y->SetDim(y->GetDimNum() - 1, 1);"]
    elif fe is not None and fshape and out == fshape[:-1]:
        body += [f"    *context->GetOutputShape(0) = *context->GetInputShape({op.frame_ext});",
                 "    gert::Shape* y = context->GetOutputShape(0);",
                 "    y->SetDimNum(y->GetDimNum() - 1);"]
    else:
        body += ["    gert::Shape* y = context->GetOutputShape(0);", f"    y->SetDimNum({len(out)});"]
        body += [f"    y->SetDim({d}, {v});" for d, v in enumerate(out)]
    body += ["    return GRAPH_SUCCESS;", "}", "}"]
    return body


def _opdef(op: AscendOp) -> list[str]:
    dt = "ge::DT_FLOAT16" if getattr(op.graph, "half", False) else "ge::DT_FLOAT"
    lines = ["namespace ops {", f"class {op.op_type} : public OpDef {{", "public:",
             f"    explicit {op.op_type}(const char* name) : OpDef(name)", "    {"]
    for e in op.exts:
        lines.append(f'        this->Input("{e.name}").ParamType(REQUIRED).DataType({{{dt}}})'
                     ".Format({ge::FORMAT_ND});")
    lines += [f'        this->Output("out").ParamType(REQUIRED).DataType({{{dt}}}).Format({{ge::FORMAT_ND}});',
              "        this->SetInferShape(ge::InferShape);",
              "        this->AICore().SetTiling(optiling::TilingFunc);",
              '        this->AICore().AddConfig("ascend910b");',
              "    }", "};", f"OP_ADD({op.op_type});", "}"]
    return lines
