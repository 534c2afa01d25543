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
A project without ``<Op>.json`` (many community operators keep only ``op_host/`` and ``op_kernel/``) is
described from its OpDef, the registration CANN's build reads (inputs, outputs, their dtypes, attributes
with their kinds and defaults); the json is then generated and marked so. String, list-of-int/float and
optional attributes become binding parameters, optional inputs are passed like required ones, and several
outputs are returned as a tuple. An output shape other than the first input's is given with ``out_shape``
(one braced list per output); dynamic (list) inputs are refused by name.

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
       "DT_INT16": "int16", "DT_INT8": "int8", "DT_UINT8": "uint8", "DT_BOOL": "bool", "DT_DOUBLE": "float64",
       "DT_UINT16": "uint16", "DT_UINT32": "uint32", "DT_UINT64": "uint64"}
def _num_list(conv: Any) -> Any:
    """A list default as json files write it: [0, 1], "{0, 1}", "[0]" or "" ({} in C++)."""
    def parse(v: Any) -> list[Any]:
        if isinstance(v, str):
            v = [t for t in re.split(r"[,\s]+", v.strip().strip("{}[]")) if t]
        return [conv(x) for x in (v or [])]
    return parse


# attribute types (json spellings, lower case) -> (C++ parameter type, Python default parser)
_ATTR = {"float": ("double", float), "float32": ("double", float), "int": ("int64_t", int),
         "int64": ("int64_t", int), "int32": ("int64_t", int),
         "bool": ("bool", lambda v: str(v).lower() == "true"),
         "str": ("std::string", str), "string": ("std::string", str),
         "list_int": ("at::IntArrayRef", _num_list(int)), "listint": ("at::IntArrayRef", _num_list(int)),
         "list_int64": ("at::IntArrayRef", _num_list(int)),
         "list_float": ("std::vector<double>", _num_list(float)), "listfloat": ("std::vector<double>", _num_list(float))}
# OpDef attribute setters -> the json's attribute type
_OPDEF_ATTR = {"Float": "float", "Int": "int", "Bool": "bool", "String": "str", "ListInt": "list_int",
               "ListFloat": "list_float"}
_SKIP_DIRS = {"build_out", "build", "AclNNInvocation", ".ipynb_checkpoints", "output"}


@dataclass
class OpProject:
    op: str  # PascalCase, e.g. LeakyReluCustom
    snake: str  # leaky_relu_custom: the file and kernel name
    desc: dict[str, Any]  # the op's entry of the json (or the one described from the OpDef)
    json_text: str
    tiling: str
    host: str
    kernel: str
    files: dict[str, Path] = field(default_factory=dict)  # which file became which string
    json_from_opdef: bool = False  # the project has no <Op>.json: project_json_src was written from the OpDef
    # strings that hold files byte for byte after generated text (a kernel-launch sample's host string holds its
    # main.cpp and tiling file: evokernel/ascend_launch_import.py)
    embedded: dict[str, list[Path]] = field(default_factory=dict)
    origin: str = "an Ascend C operator project"


def snake_case(op: str) -> str:
    """The op's file and kernel name, as the verifier spells it (msopgen's: LayerNormCustom -> layer_norm_custom,
    GEMMCustom -> gemm_custom): one converter for both, so what the importer writes is what the verifier reads."""
    from evokernel.verifier.backends.ascend_sim.project import pascal_to_snake

    return pascal_to_snake(op)


def _snake_spellings(op: str) -> list[str]:
    """Names a project's files may carry for ``op``: msopgen's first, then one-underscore-per-capital
    (GEMMCustom -> g_e_m_m_custom) and the split-after-lower-case-only spelling (gemmcustom)."""
    names = [snake_case(op), re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower(),
             re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op).lower()]
    return list(dict.fromkeys(names))


def _op_entries(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    # an op description (msopgen's), not a test-case json that also names its op (msOpST_*.json)
    return [e for e in data if isinstance(e, dict) and isinstance(e.get("op"), str)
            and (isinstance(e.get("input_desc"), list) or isinstance(e.get("output_desc"), list))] \
        if isinstance(data, list) else []


def _clean(text: str) -> str:
    from evokernel.verifier.backends.ascend_sim.project import strip_comments

    return strip_comments(text)


def read_source(path: Path) -> str:
    """A source file's text: UTF-8 (byte for byte), else GB18030 (community code often carries Chinese comments
    in a GBK encoding; the code itself is ASCII and unchanged)."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("gb18030", errors="replace")


def _skipped(path: Path, root: Path) -> bool:
    return any(part in _SKIP_DIRS for part in path.relative_to(root).parts)


def _literal_value(kind: str, text: str) -> Any:
    """The default of an OpDef attribute setter's argument: .Float(1e-05), .Int(-1), .Bool(false),
    .String("None"), .ListInt({0, 1})."""
    text = text.strip()
    if text == "":
        return None
    if kind in ("list_int", "list_float"):
        items = [t.strip() for t in text.strip("{}").split(",") if t.strip()]
        conv = int if kind == "list_int" else float
        return [conv(re.sub(r"[fFlLuU]+$", "", t)) for t in items]
    if kind == "str":
        m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', text)
        return m.group(1) if m else text
    if kind == "bool":
        return text.lower() == "true"
    return (int if kind == "int" else float)(re.sub(r"(?<=\d)[fFlLuU]+$", "", text))


def opdef_desc(host: str) -> dict[str, Any] | None:
    """The op description (the json's shape) read from the OpDef in a host source: ``OP_ADD(Name)``, and in
    Name's constructor ``this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ...})``, the same for
    ``Output``, and ``this->Attr("a").AttrType(OPTIONAL).Float(1.0)`` (Int, Bool, String, ListInt,
    ListFloat). None when the source registers no op."""
    text = _clean(host)
    added = re.findall(r"\bOP_ADD\s*\(\s*([A-Za-z_]\w*)", text)
    if not added:
        return None
    op = added[0]
    desc: dict[str, Any] = {"op": op, "input_desc": [], "output_desc": [], "attr": []}
    for m in re.finditer(r'this\s*->\s*(Input|Output|Attr)\s*\(\s*"([^"]+)"\s*\)(.*?);', text, re.S):
        kind, name, chain = m.group(1), m.group(2), m.group(3)
        pt = re.search(r"\.ParamType\s*\(\s*(?:\w+::)*(\w+)\s*\)", chain)
        if kind == "Attr":
            at = re.search(r"\.AttrType\s*\(\s*(?:\w+::)*(\w+)\s*\)", chain)
            setter = re.search(r"\.(Float|Int|Bool|String|ListInt|ListFloat)\s*\(", chain)
            if not setter:
                raise ImportError_(f"{op}: the OpDef's attribute {name!r} has no type this importer reads "
                                   f"(Float, Int, Bool, String, ListInt, ListFloat)")
            typ = _OPDEF_ATTR[setter.group(1)]
            from evokernel.verifier.backends.ascend_sim.project import _match
            close = _match(chain, setter.end() - 1, "(", ")")
            default = _literal_value(typ, chain[setter.end():close])
            entry: dict[str, Any] = {"name": name, "param_type": (at.group(1).lower() if at else "required"),
                                     "type": typ}
            if default is not None:
                entry["default_value"] = default
            desc["attr"].append(entry)
            continue
        d = re.search(r"\.DataType\s*\(\s*\{([^}]*)\}", chain)
        names = [t.strip().split("::")[-1] for t in (d.group(1).split(",") if d else []) if t.strip()]
        unknown = [n for n in names if n not in _GE]
        if unknown or not names:
            raise ImportError_(f"{op}: {kind.lower()} {name!r} of the OpDef: dtypes {unknown or 'missing'} are not "
                               f"ones this importer reads ({', '.join(_GE)})")
        desc["input_desc" if kind == "Input" else "output_desc"].append(
            {"name": name, "param_type": (pt.group(1).lower() if pt else "required"),
             "format": ["ND"] * len(names), "type": [_GE[n] for n in names]})
    if not desc["attr"]:
        del desc["attr"]
    return desc


def _kernel_file(kernel_dir: Path, op: str) -> tuple[str, Path] | None:
    for snake in _snake_spellings(op):
        if (kernel_dir / f"{snake}.cpp").is_file():
            return snake, kernel_dir / f"{snake}.cpp"
    return None


def _tiling_file(host_dir: Path, host_text: str, snake: str) -> Path | None:
    for cand in (host_dir / f"{snake}_tiling.h", host_dir.parent / "op_kernel" / f"{snake}_tiling.h"):
        if cand.is_file():
            return cand
    for inc in re.findall(r'#\s*include\s*"([^"]*tiling[^"]*\.h)"', host_text):  # the tiling header it includes
        cand = (host_dir / inc).resolve()
        if cand.is_file() and host_dir.parent.resolve() in cand.parents:
            return cand
    return None


def find_project(root: Path) -> OpProject:
    """The op project under ``root`` (the op's folder or one above it, e.g. a sample's FrameworkLaunch). Its
    description is ``<Op>.json`` (under ``root`` or up to two levels above it) or, when there is none, the
    OpDef of its host source."""
    root = Path(root)
    if not root.is_dir():
        raise ImportError_(f"{root}: not a directory (give the folder holding op_host/ and op_kernel/, or "
                           "<Op>.json)")
    entries: dict[str, tuple[dict[str, Any], Path]] = {}
    jsons = [js for js in sorted(root.rglob("*.json")) if not _skipped(js, root)]
    for js in jsons + sorted(root.parent.glob("*.json")) + sorted(root.parent.parent.glob("*.json")):
        for entry in _op_entries(js):
            entries.setdefault(entry["op"], (entry, js))
    found: list[OpProject] = []
    for host_dir in sorted(root.rglob("op_host")):
        if _skipped(host_dir, root) or not host_dir.is_dir():
            continue
        kernel_dir = host_dir.parent / "op_kernel"
        for host in sorted(host_dir.glob("*.cpp")):
            host_text = read_source(host)
            described = opdef_desc(host_text)
            ops = [described["op"]] if described else [op for op in entries if any(
                (host_dir / f"{s}.cpp") == host for s in _snake_spellings(op))]
            for op in ops:
                kf = _kernel_file(kernel_dir, op)
                if kf is None:
                    continue
                snake, kernel = kf
                tiling = _tiling_file(host_dir, host_text, snake)
                if tiling is None:
                    continue
                files = {"host_tiling_src": tiling, "host_operator_src": host, "kernel_src": kernel}
                # a json whose inputs, outputs or attributes (names, kinds) differ from the OpDef's loses to it (CANN
                # registers the OpDef: PdistGrad's json of HWXROS/AscendcS7 omits the OpDef's attribute p, LogSumExp's
                # of KiaraStark/ascendc-homework calls its ListInt attribute dim an int64)
                def names(d: dict[str, Any]) -> list[Any]:
                    io = [[x.get("name") for x in d.get(k) or []] for k in ("input_desc", "output_desc")]
                    if described is None or not described.get("attr"):  # no OpDef attributes read: the json's
                        return io
                    return io + [[(a.get("name"), _ATTR.get(str(a.get("type", "")).lower(), (a.get("type"),))[0])
                                  for a in d.get("attr") or []]]
                if op in entries and (described is None or names(entries[op][0]) == names(described)):
                    desc, js = entries[op]
                    json_text, from_opdef = read_source(js), False
                    files = {"project_json_src": js, **files}
                    if len(_op_entries(js)) != 1:  # a json of several ops: the verifier takes one
                        json_text = json.dumps([desc], indent=4) + "\n"
                        from_opdef = True
                elif described is not None:  # no json, or one the OpDef (what CANN registers) contradicts
                    desc, json_text, from_opdef = described, json.dumps([described], indent=4) + "\n", True
                else:
                    continue
                found.append(OpProject(
                    op=op, snake=snake_case(op), desc=desc, json_text=json_text,
                    tiling=read_source(tiling), host=read_source(host), kernel=read_source(kernel),
                    files=files, json_from_opdef=from_opdef))
    if not found:
        raise ImportError_(
            f"{root}: no op project found: expected op_host/<op>.cpp registering the op (OP_ADD(<Op>)) or an "
            "<Op>.json (a list with an \"op\" entry) and, for op <Op> = FooBar, op_host/foo_bar_tiling.h, "
            "op_host/foo_bar.cpp and op_kernel/foo_bar.cpp")
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


def _cpp_name(name: str) -> str:
    """A C++ identifier for a parameter (an attribute called ``dtype`` or ``int`` would not compile)."""
    return name if re.fullmatch(r"[A-Za-z_]\w*", name) and name not in {"int", "float", "bool", "double", "char",
                                                                      "auto", "default", "return", "m"} else f"{name}_"


def split_shapes(out_shape: str | None) -> list[str]:
    """``"{a.size(0), b.size(1)}"`` -> one braced list; ``"{a.size(0)};{a.size(0), 1}"`` -> one per output."""
    if not out_shape:
        return []
    return [s.strip() for s in out_shape.split(";") if s.strip()]


def _binding(p: OpProject, out_shape: str | None = None) -> tuple[str, list[tuple[str, str, Any]]]:
    """(python_bind_src, the attributes as (name, C++ type, default))."""
    inputs = p.desc.get("input_desc") or []
    outputs = p.desc.get("output_desc") or []
    if not inputs:
        raise ImportError_(f"{p.op}: the op has no inputs (it makes a tensor from its attributes): write "
                           "python_bind_src by hand, allocating the output from the attributes")
    if not outputs:
        raise ImportError_(f"{p.op}: the op has no outputs (it updates an input in place): write python_bind_src "
                           "by hand")
    for d in inputs + outputs:
        if d.get("param_type", "required") == "dynamic":
            raise ImportError_(f"{p.op}: {d.get('name')!r} is dynamic (a list of tensors): write python_bind_src "
                               "by hand for dynamic inputs and outputs")
    attrs: list[tuple[str, str, Any]] = []
    for a in p.desc.get("attr") or []:
        kind = str(a.get("type", "")).lower()
        if kind not in _ATTR:
            raise ImportError_(f"{p.op}: attribute {a.get('name')!r} of type {kind!r}: the generated binding takes "
                               f"{', '.join(sorted(set(_ATTR)))} attributes; write python_bind_src by hand")
        ctype, parse = _ATTR[kind]
        default = a.get("default_value")
        attrs.append((str(a["name"]), ctype, parse(default) if default is not None else None))
    first = str(inputs[0]["name"])
    in_types = opdef_types(p.host, "Input", first) or _types(inputs[0])
    shapes = split_shapes(out_shape)
    if shapes and len(shapes) not in (1, len(outputs)):
        raise ImportError_(f"{p.op}: {len(shapes)} output shapes given for {len(outputs)} outputs (one braced list "
                           "per output, separated by ';', or one for all)")
    allocs = []
    for k, out in enumerate(outputs):
        out_types = opdef_types(p.host, "Output", str(out["name"])) or _types(out)
        dtype = ""
        if out_types and in_types and len(out_types) == len(in_types) and out_types != in_types:
            if len(set(out_types)) != 1 or out_types[0] not in _AT:
                raise ImportError_(f"{p.op}: output {out['name']!r}'s dtype follows the input's in a way the "
                                   "generated binding cannot say; write python_bind_src by hand")
            dtype = f".dtype({_AT[out_types[0]]})"
        elif out_types and len(set(out_types)) == 1 and out_types[0] in _AT and in_types and \
                len(in_types) != len(out_types):
            dtype = f".dtype({_AT[out_types[0]]})"
        shape = shapes[k] if len(shapes) > 1 else (shapes[0] if shapes else "")
        if shape:
            allocs.append(f"at::empty({shape}, {first}.options(){dtype})")
        elif dtype:
            allocs.append(f"at::empty({first}.sizes(), {first}.options(){dtype})")
        else:
            allocs.append(f"at::empty_like({first})")
    params = [f"const at::Tensor& {_cpp_name(d['name'])}" for d in inputs] + \
             [f"{ct} {_cpp_name(n)}" for n, ct, _ in attrs]
    out_names = [_cpp_name(str(o["name"])) for o in outputs]
    call = [_cpp_name(str(d["name"])) for d in inputs] + [_cpp_name(n) for n, _, _ in attrs] + out_names
    if len(outputs) == 1:
        ret_type, ret = "at::Tensor", out_names[0]
    else:
        ret_type = f"std::tuple<{', '.join('at::Tensor' for _ in outputs)}>"
        ret = f"std::make_tuple({', '.join(out_names)})"
    decls = "\n".join(f"    at::Tensor {n} = {a};" for n, a in zip(out_names, allocs))
    said = "the sizes " + out_shape if out_shape else "the first input's shape"
    src = f"""
#include <torch/extension.h>
#include "pytorch_npu_helper.hpp"

// generated by `evokernel ascend import` from {p.op}'s {"OpDef" if p.json_from_opdef else "json"}: the output(s) have {said}
// (edit the allocation if {p.op} changes the shape)
{ret_type} {p.snake}_impl_npu({", ".join(params)}) {{
{decls}
    EXEC_NPU_CMD(aclnn{p.op}, {", ".join(call)});
    return {ret};
}}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{
    m.def("{p.snake}", &{p.snake}_impl_npu, "{p.op}");
}}
"""
    return src, attrs


def _py_default(v: Any) -> str:
    """A default our model_src rules accept: a negative number as a literal (-1), a list as a tuple (a mutable
    default is refused)."""
    if isinstance(v, list):
        return repr(tuple(v))
    return repr(v)


def _model(p: OpProject, attrs: list[tuple[str, str, Any]]) -> str:
    inputs = [str(d["name"]) for d in p.desc.get("input_desc") or []]
    names = [(n if n.isidentifier() and n not in ("self",) else f"{n}_") for n, _, _ in attrs]
    init_args = "".join(f", {n}={_py_default(d)}" if d is not None else f", {n}"
                        for n, (_, _, d) in zip(names, attrs))
    keep = "".join(f"\n        self.{n} = {'list(' + n + ')' if isinstance(d, list) else n}"
                   for n, (_, _, d) in zip(names, attrs))
    call = ", ".join(inputs + [f"self.{n}" for n in names])
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
    origin = "\n".join([f"  {k}: {v}" for k, v in p.files.items()] +
                       [f"  {k}: {', '.join(str(f) for f in fs)} (after a generated prelude)" for k, fs in p.embedded.items()])
    made = ("project_json_src (described from the OpDef: the project has no json of its own), python_bind_src "
            "and model_src are generated." if p.json_from_opdef and not p.embedded else
            "project_json_src, host_tiling_src, the rest of host_operator_src, python_bind_src and model_src are "
            "generated." if p.embedded else
            "python_bind_src and model_src are generated from the json.")
    parts = [f'"""{p.op}: {p.origin} imported unchanged by `evokernel ascend import`.\n\n'
             f"From:\n{origin}\n{made}\"\"\"\n\n",
             _literal("project_json_src", p.json_text), _literal("host_tiling_src", p.tiling),
             _literal("host_operator_src", p.host), _literal("kernel_src", p.kernel),
             _literal("python_bind_src", bind), _literal("model_src", _model(p, attrs))]
    return "\n".join(parts)


def import_project(root: Path, out: Path | None = None, out_shape: str | None = None) -> tuple[OpProject, str]:
    """Find the project under ``root``, build its candidate (written to ``out`` when given). ``out_shape``: the
    output's sizes as a C++ braced list over the inputs (e.g. "{a.size(0), b.size(1)}"), when they are not the
    first input's; several outputs: one list per output separated by ';'."""
    p = find_project(root)
    text = candidate_source(p, out_shape)
    if out is not None:
        Path(out).write_text(text, encoding="utf-8")
    return p, text
