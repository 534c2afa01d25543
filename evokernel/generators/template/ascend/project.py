"""What every Ascend C family's operator project is made of, besides its kernel and host: the MultiKernelBench
candidate file (a docstring and six strings: ``project_json_src``, ``host_tiling_src``, ``host_operator_src``,
``kernel_src``, ``python_bind_src``, ``model_src``), the python binding and ModelNew.
"""
from __future__ import annotations

from evokernel.generators.template.front.graph import AnalysisError


def tiling_func_head(tiling_cls: str) -> list[str]:
    """The start of a vector family's TilingFunc: the platform's UB size and vector cores (half of them for the
    ``blocks = half`` knob, the host's ``BLOCK_MODE`` 1)."""
    return ["static ge::graphStatus TilingFunc(gert::TilingContext* context)",
            "{",
            f"    {tiling_cls} tiling;",
            "    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());",
            "    uint64_t ub = 0;",
            "    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);",
            "    uint32_t coreNum = platform.GetCoreNumAiv();",
            "    if (BLOCK_MODE == 1) coreNum = coreNum / 2 > 0 ? coreNum / 2 : 1;"]


# the end of a vector family's TilingFunc: the tiling saved, no workspace; and of its namespace
TILING_FUNC_TAIL = ["    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
                    "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
                    "    size_t* workspace = context->GetWorkspaceSizes(1);",
                    "    workspace[0] = 0;",
                    "    return ge::GRAPH_SUCCESS;",
                    "}",
                    "}"]


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
