"""An Ascend C operator project as others write it (msopgen layout) -> an EvoKernel candidate, unchanged.

CANN's samples and most hand-written operators are msopgen projects::

    <Op>.json                      the op description (inputs, outputs, attributes, dtypes)
    <Op>/op_host/<op>_tiling.h     BEGIN_TILING_DATA_DEF ... REGISTER_TILING_DATA_CLASS
    <Op>/op_host/<op>.cpp          TilingFunc, InferShape, the OpDef
    <Op>/op_kernel/<op>.cpp        the kernel

`import_project` reads such a tree and writes the six-string candidate of docs/ascend-sim.md: the json,
tiling header, host source and kernel go in **byte for byte**; the two strings a project does not have are
generated from the json: the PyTorch binding (``python_bind_src``: outputs allocated like the first input,
with the output's own dtype when the OpDef (else the json) gives it another one; ``EXEC_NPU_CMD`` with inputs, attributes,
outputs) and ``model_src`` (a ``ModelNew`` whose constructor takes the attributes, with the json's defaults).
An operator whose output shape differs from its first input's needs its binding edited by hand (the
generated one says so), as do optional and dynamic (list) inputs, which are refused with that message.

    evokernel ascend import path/to/FrameworkLaunch -o gelu_candidate.py
    evokernel verify TASK gelu_candidate.py --backend ascend-sim
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ImportError_", "OpProject", "candidate_source", "find_project", "import_project"]


class ImportError_(ValueError):
    """The directory is not an op project this importer can read (with what is missing)."""


# json dtype names -> ATen scalar types
_AT = {"float": "at::kFloat", "float32": "at::kFloat", "fp32": "at::kFloat", "float16": "at::kHalf",
       "fp16": "at::kHalf", "half": "at::kHalf", "bfloat16": "at::kBFloat16", "bf16": "at::kBFloat16",
       "int32": "at::kInt", "int64": "at::kLong", "int16": "at::kShort", "int8": "at::kChar", "uint8": "at::kByte",
       "bool": "at::kBool"}
# OpDef dtypes (ge::DT_*) -> the json's names
_GE = {"DT_FLOAT": "float", "DT_FLOAT16": "float16", "DT_BF16": "bfloat16", "DT_INT32": "int32", "DT_INT64": "int64",
       "DT_INT16": "int16", "DT_INT8": "int8", "DT_UINT8": "uint8", "DT_BOOL": "bool"}
# json attribute types -> (C++ parameter type, Python default parser)
_ATTR = {"float": ("double", float), "int": ("int64_t", int), "bool": ("bool", lambda v: str(v).lower() == "true")}


@dataclass
class OpProject:
    op: str  # PascalCase, e.g. LeakyReluCustom
    snake: str  # leaky_relu_custom: the file and kernel name
    desc: dict[str, Any]  # the op's entry of the json
    json_text: str
    tiling: str
    host: str
    kernel: str
    files: dict[str, Path] = field(default_factory=dict)  # which file became which string


def snake_case(op: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op).lower()


def _op_entries(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    return [e for e in data if isinstance(e, dict) and isinstance(e.get("op"), str)] if isinstance(data, list) else []


def find_project(root: Path) -> OpProject:
    """The op project under ``root`` (the op's folder or one above it, e.g. a sample's FrameworkLaunch)."""
    root = Path(root)
    if not root.is_dir():
        raise ImportError_(f"{root}: not a directory (give the folder holding <Op>.json and op_host/, op_kernel/)")
    found: list[OpProject] = []
    jsons = [js for js in sorted(root.rglob("*.json"))
             if not any(part in {"build_out", "build", "AclNNInvocation"} for part in js.relative_to(root).parts)]
    if not jsons:  # one op project of several that share the json one level up (the matmul sample's MultiCore)
        jsons = sorted(root.parent.glob("*.json"))
    for js in jsons:
        for entry in _op_entries(js):
            snake = snake_case(entry["op"])
            for host_dir in sorted(root.rglob("op_host")):
                tiling, host = host_dir / f"{snake}_tiling.h", host_dir / f"{snake}.cpp"
                kernel = host_dir.parent / "op_kernel" / f"{snake}.cpp"
                if not tiling.is_file():  # a plain tiling struct kept with the kernel (kernel_tiling.h style)
                    tiling = host_dir.parent / "op_kernel" / f"{snake}_tiling.h"
                if tiling.is_file() and host.is_file() and kernel.is_file():
                    found.append(OpProject(
                        op=entry["op"], snake=snake, desc=entry, json_text=js.read_text(encoding="utf-8"),
                        tiling=tiling.read_text(encoding="utf-8"), host=host.read_text(encoding="utf-8"),
                        kernel=kernel.read_text(encoding="utf-8"),
                        files={"project_json_src": js, "host_tiling_src": tiling, "host_operator_src": host,
                               "kernel_src": kernel}))
                    break
    if not found:
        raise ImportError_(
            f"{root}: no op project found: expected <Op>.json (a list with an \"op\" entry) and, for op "
            "<Op> = FooBar, op_host/foo_bar_tiling.h, op_host/foo_bar.cpp and op_kernel/foo_bar.cpp")
    if len({p.op for p in found}) > 1:
        raise ImportError_(f"{root}: several op projects ({', '.join(sorted({p.op for p in found}))}); "
                           "give the folder of one")
    return found[0]


def _types(desc: dict[str, Any]) -> list[str]:
    types = desc.get("type") or []
    return [str(t).lower() for t in (types if isinstance(types, list) else [types])]


def opdef_types(host: str, kind: str, name: str) -> list[str] | None:
    """The dtypes the OpDef in the host source declares for ``this->Input/Output("name")`` (json names), or
    None when it does not say. The OpDef is what the operator is registered with (the emulator checks
    against it, as CANN does); a sample's json can disagree (GreaterEqual: float in the json, bool in its
    OpDef)."""
    m = re.search(rf'{kind}\(\s*"{re.escape(name)}"\s*\)(.*?)(?:this->|;)', host, re.S)
    if not m:
        return None
    d = re.search(r"\.DataType\(\s*\{([^}]*)\}", m.group(1))
    if not d:
        return None
    names = [t.strip().split("::")[-1] for t in d.group(1).split(",") if t.strip()]
    return [_GE[n] for n in names] if all(n in _GE for n in names) else None


def _binding(p: OpProject, out_shape: str | None = None) -> tuple[str, list[tuple[str, str, Any]]]:
    """(python_bind_src, the attributes as (name, C++ type, default))."""
    inputs = p.desc.get("input_desc") or []
    outputs = p.desc.get("output_desc") or []
    if not inputs or not outputs:
        raise ImportError_(f"{p.op}: the json names no inputs or no outputs")
    for d in inputs:
        if d.get("param_type", "required") != "required":
            raise ImportError_(f"{p.op}: input {d.get('name')!r} is {d.get('param_type')}: write python_bind_src "
                               "by hand for optional and dynamic (list) inputs")
    if len(outputs) != 1:
        raise ImportError_(f"{p.op}: {len(outputs)} outputs: the generated binding returns one tensor; write "
                           "python_bind_src by hand")
    attrs: list[tuple[str, str, Any]] = []
    for a in p.desc.get("attr") or []:
        kind = str(a.get("type", "")).lower()
        if kind not in _ATTR:
            raise ImportError_(f"{p.op}: attribute {a.get('name')!r} of type {kind!r}: the generated binding takes "
                               f"{', '.join(_ATTR)} attributes; write python_bind_src by hand")
        ctype, parse = _ATTR[kind]
        default = a.get("default_value")
        attrs.append((str(a["name"]), ctype, parse(default) if default is not None else None))
    first = str(inputs[0]["name"])
    out = outputs[0]
    in_types = opdef_types(p.host, "Input", str(inputs[0]["name"])) or _types(inputs[0])
    out_types = opdef_types(p.host, "Output", str(out["name"])) or _types(out)
    if out_types and in_types and len(out_types) == len(in_types) and out_types != in_types:
        if len(set(out_types)) != 1 or out_types[0] not in _AT:
            raise ImportError_(f"{p.op}: the output's dtype follows the input's in a way the generated binding "
                               "cannot say; write python_bind_src by hand")
        alloc = f"at::empty({first}.sizes(), {first}.options().dtype({_AT[out_types[0]]}))"
    else:
        alloc = f"at::empty_like({first})"
    if out_shape:  # the output's sizes, when they are not the first input's (a matmul: {a.size(0), b.size(1)})
        dtype = (f".dtype({_AT[out_types[0]]})" if out_types and len(set(out_types)) == 1 and out_types[0] in _AT
                 else "")
        alloc = f"at::empty({out_shape}, {first}.options(){dtype})"
    params = [f"const at::Tensor& {d['name']}" for d in inputs] + [f"{ct} {n}" for n, ct, _ in attrs]
    call = [str(d["name"]) for d in inputs] + [n for n, _, _ in attrs] + [str(out["name"])]
    src = f"""
#include <torch/extension.h>
#include "pytorch_npu_helper.hpp"

// generated by `evokernel ascend import` from {p.op}'s json: the output has {"the sizes " + out_shape if out_shape else "the first input's shape"}
// (edit the allocation if {p.op} changes the shape)
at::Tensor {p.snake}_impl_npu({", ".join(params)}) {{
    at::Tensor {out["name"]} = {alloc};
    EXEC_NPU_CMD(aclnn{p.op}, {", ".join(call)});
    return {out["name"]};
}}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{
    m.def("{p.snake}", &{p.snake}_impl_npu, "{p.op}");
}}
"""
    return src, attrs


def _model(p: OpProject, attrs: list[tuple[str, str, Any]]) -> str:
    inputs = [str(d["name"]) for d in p.desc.get("input_desc") or []]
    init_args = "".join(f", {n}={d!r}" if d is not None else f", {n}" for n, _, d in attrs)
    keep = "".join(f"\n        self.{n} = {n}" for n, _, _ in attrs)
    call = ", ".join(inputs + [f"self.{n}" for n, _, _ in attrs])
    return f"""
import torch
import torch_npu
import custom_ops_lib


class ModelNew(torch.nn.Module):
    def __init__(self{init_args}) -> None:
        super().__init__(){keep}

    def forward(self, {", ".join(inputs)}):
        return custom_ops_lib.{p.snake}({call})
"""


def _literal(name: str, text: str) -> str:
    """A Python string literal holding ``text`` exactly (the verifier reads literals, never runs the file)."""
    return f"{name} = {text!r}\n"


def candidate_source(p: OpProject, out_shape: str | None = None) -> str:
    bind, attrs = _binding(p, out_shape)
    origin = "\n".join(f"  {k}: {v}" for k, v in p.files.items())
    parts = [f'"""{p.op}: an Ascend C operator project imported unchanged by `evokernel ascend import`.\n\n'
             f"From:\n{origin}\n"
             'python_bind_src and model_src are generated from the json."""\n\n',
             _literal("project_json_src", p.json_text), _literal("host_tiling_src", p.tiling),
             _literal("host_operator_src", p.host), _literal("kernel_src", p.kernel),
             _literal("python_bind_src", bind), _literal("model_src", _model(p, attrs))]
    return "\n".join(parts)


def import_project(root: Path, out: Path | None = None, out_shape: str | None = None) -> tuple[OpProject, str]:
    """Find the project under ``root``, build its candidate (written to ``out`` when given). ``out_shape``: the
    output's sizes as a C++ braced list over the inputs (e.g. "{a.size(0), b.size(1)}"), when they are not the
    first input's."""
    p = find_project(root)
    text = candidate_source(p, out_shape)
    if out is not None:
        Path(out).write_text(text, encoding="utf-8")
    return p, text
