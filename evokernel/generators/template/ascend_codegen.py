"""Ascend C operator projects for the template generator (backends ``ascend-sim`` and ``ascend``).

A candidate is the MultiKernelBench operator-project file: six strings (``project_json_src``,
``host_tiling_src``, ``host_operator_src``, ``kernel_src``, ``python_bind_src``, ``model_src``).
The task goes through the same analysis and stage plan as for the cpu backend; :func:`prepare`
accepts plans of exactly one ``row`` stage (elementwise chains, last-dimension reductions, softmax /
log-softmax, layer / RMS normalisation and fusions of these) and classifies every value of the stage
against the frame ``(rows, N)``:

* ``J`` varies along rows and columns (a tile of ``kk`` rows x ``cc`` columns in UB),
* ``R`` one value per row (a reduction, a ``(..., 1)`` input): a vector of ``kk`` slots in UB,
* ``C`` one value per column (a ``(N,)`` weight/bias and what is computed from it): one chunk row,
* ``S`` one value (a ``(1,)`` parameter): a float read once per block on the scalar unit,
* literals: the reference's constants (eps, slopes, scales).

Three kernel families:

* ``ascend_elementwise`` -- only J inputs and scalars, no reduction: a flat 1-D split of the tensor
  over the blocks in 32-byte units, tiles of ``tile`` elements, an unaligned tail moved with
  DataCopyPad (the shape of the canonical add_custom example);
* ``ascend_row`` -- rows split over the blocks; a tile is ``kk`` whole rows (or, for rows longer than
  a tile, one row in chunks). ``row_mode=stream`` evaluates each reduction in its own pass over GM
  (recomputing the elementwise ops it reduces) and a final pass writes the output; ``resident`` reads a
  tile of rows once and runs every phase in UB. ``vec_form=count`` uses count-form instructions per row
  (row scalars read back with a V->S sync); ``repeat`` uses mask/repeat forms over all rows of the tile
  (WholeReduce, a 64-lane fold, Brcb-broadcast binary ops). A whole-tensor sum/mean as the output folds
  each tile's row results into a block total, added atomically into the binding's zero-filled scalar;
* ``ascend_colreduce`` -- a reduction over a run of middle dimensions ``(outer, mid, inner) -> (outer,
  inner)``: units of one outer index x a column chunk (narrower chunks when there are fewer units than
  cores), tiles of several reduced rows, combined row by row (``count``) or by a pairwise tree (``repeat``).

Computation is in float32. Transcendental functions are composed from the emulated instructions
(Exp, Ln, Abs, Sqrt, Div, Muls, Adds, Maxs, Mins, Relu, LeakyRelu, Duplicate) in overflow-safe forms;
Rsqrt/Reciprocal are avoided (approximate on the device) in favour of Div.

Where each part lives: the task -> :class:`AscendOp` analysis in :mod:`.ascend_op`; instruction sequences in
:mod:`.ascend_vecops`; the kernels in :mod:`.ascend_row`, :mod:`.ascend_elementwise`, :mod:`.ascend_colreduce`;
the host tiling, InferShape and OpDef in :mod:`.ascend_host`. This module assembles the six strings (and hands
the cube and conv families to :mod:`.ascend_cube` and :mod:`.ascend_conv`); the names other modules use are
re-exported here.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.analysis import AnalysisError
from evokernel.generators.template.ascend_colreduce import ColKernel, _host_col
from evokernel.generators.template.ascend_elementwise import FlatKernel
from evokernel.generators.template.ascend_host import _host_flat, _host_row, _infer_shape, _opdef, geometry
from evokernel.generators.template.ascend_op import AscendOp, Ext, _ident, _snake, flit, own_init, prepare
from evokernel.generators.template.ascend_row import Consts, RowKernel
from evokernel.generators.template.ascend_vecops import BIN_OP, Scalar, binary_code, unary_code

__all__ = ["AscendOp", "BIN_OP", "Consts", "Ext", "RowKernel", "Scalar", "binary_code", "binding_source",
           "candidate_file", "flit", "geometry", "model_source", "own_init", "prepare", "render_project",
           "unary_code", "_ident", "_snake"]

# ----------------------------------------------------------------------------------- candidate


def render_project(op: AscendOp, knobs: dict[str, Any]) -> tuple[dict[str, str], Consts, dict[str, int] | None]:
    """The six strings of the operator project, the buffer counts and the host's geometry."""
    if op.family == "ascend_cube":
        from evokernel.generators.template import ascend_cube

        return ascend_cube.render_project(op, knobs)  # type: ignore[arg-type,return-value]
    if op.family == "ascend_conv":
        from evokernel.generators.template import ascend_conv

        return ascend_conv.render_project(op, knobs)  # type: ignore[arg-type,return-value]
    tiling_cls = f"{op.op_type}TilingData"
    cls = f"Kernel{op.op_type}"
    writer: Any
    if op.family == "ascend_colreduce":
        writer = ColKernel(op, knobs)
    elif op.family == "ascend_elementwise":
        writer = FlatKernel(op, knobs)
    else:
        writer = RowKernel(op, knobs)
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
    if op.family == "ascend_colreduce":
        fields = [("outer", "dims before the reduced ones"), ("mid", "the reduced dims"), ("inner", "dims after"),
                  ("chunk", "columns per unit"), ("cPad", "chunk rounded up to 32 bytes"),
                  ("midRows", "reduced rows per tile"), ("colChunks", ""), ("unitsPerBlock", ""),
                  ("bigBlocks", "the first bigBlocks blocks take one unit more")]
        host_core = _host_col(op, knobs, consts, tiling_cls)
    elif op.family == "ascend_elementwise":
        fields = [("totalLength", ""), ("unitLength", "elements per 32-byte unit"), ("unitsPerBlock", ""),
                  ("bigBlocks", "the first bigBlocks blocks take one unit more"), ("tileLength", "elements per tile")]
        host_core = _host_flat(op, knobs, consts, tiling_cls)
    else:
        fields = [("rows", ""), ("cols", "the last dimension"), ("rowsPerBlock", ""),
                  ("bigBlocks", "the first bigBlocks blocks take one row more"), ("tileRows", "rows per tile"),
                  ("chunk", "columns per tile (cols unless a row is longer than a tile)"),
                  ("kPad", "tileRows rounded up to 8"), ("cPad", "chunk rounded up to 8")]
        host_core = _host_row(op, knobs, consts, tiling_cls)
    tiling = "\n".join(['#include "register/tilingdata_base.h"', "", "namespace optiling {",
                        f"BEGIN_TILING_DATA_DEF({tiling_cls})"] +
                       [f"  TILING_DATA_FIELD_DEF(uint32_t, {f});" + (f"  // {c}" if c else "") for f, c in fields] +
                       ["END_TILING_DATA_DEF;", "", f"REGISTER_TILING_DATA_CLASS({op.op_type}, {tiling_cls})", "}"])
    host = "\n".join([f'#include "{op.kernel_name}_tiling.h"', '#include "register/op_def_registry.h"',
                      '#include "tiling/platform/platform_ascendc.h"', "", host_core, ""] + _infer_shape(op) + [""] +
                     _opdef(op))
    import json as _json
    ty = "float16" if getattr(op.graph, "half", False) else "float"
    desc = [{"op": op.op_type, "language": "cpp",
             "input_desc": [{"name": e.name, "param_type": "required", "format": ["ND"], "type": [ty]}
                            for e in op.exts],
             "output_desc": [{"name": "out", "param_type": "required", "format": ["ND"], "type": [ty]}]}]
    project_json = _json.dumps(desc, indent=4)
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


def binding_source(kernel_name: str, op_type: str, params: str, alloc: str, args: str, doc: str) -> str:
    """python_bind_src: allocate the result, EXEC_NPU_CMD the aclnn op, register it for torch."""
    return "\n".join([
        "#include <torch/library.h>",
        "#include <torch/csrc/autograd/custom_function.h>",
        '#include "pytorch_npu_helper.hpp"',
        "#include <torch/extension.h>",
        "",
        f"at::Tensor {kernel_name}_impl_npu({params}) {{",
        f"    {alloc}",
        f"    EXEC_NPU_CMD(aclnn{op_type}, {args}, result);",
        "    return result;",
        "}",
        "",
        "TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {",
        f'    m.impl("{kernel_name}", &{kernel_name}_impl_npu);',
        "}",
        "",
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {",
        f'    m.def("{kernel_name}", &{kernel_name}_impl_npu, "{doc}");',
        "}"])


def model_source(init_source: str, input_names: list[str], kernel_name: str, call: str) -> str:
    """model_src: ModelNew with the reference's __init__ (its parameters), forward calling the operator."""
    init = init_source or "def __init__(self, *args):\n    super().__init__()"
    init = "\n".join("    " + ln for ln in init.splitlines())
    imports = ["import torch", "import torch.nn as nn", "import torch_npu", "import custom_ops_lib"]
    if "math." in init:
        imports.insert(0, "import math")
    return "\n".join(imports + ["", "", "class ModelNew(nn.Module):", init, "",
                                 f"    def forward(self, {', '.join(input_names)}):",
                                 f"        return custom_ops_lib.{kernel_name}({call})"])


PART_ORDER = ("project_json_src", "host_tiling_src", "host_operator_src", "kernel_src", "python_bind_src", "model_src")


def candidate_file(parts: dict[str, str], header: str) -> str:
    """The candidate: a docstring and the six strings."""
    chunks = [f'"""{header.rstrip()}\n"""', ""]
    for name in PART_ORDER:
        text = parts[name]
        if '"""' in text or "\\" in text:
            raise AnalysisError(f"{name} cannot be written as a plain triple-quoted string")
        chunks += [f'{name} = """', text.rstrip("\n"), '"""', ""]
    return "\n".join(chunks)
