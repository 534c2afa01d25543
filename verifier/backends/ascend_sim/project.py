"""The Ascend C candidate format: an operator project as six strings (MultiKernelBench / NPU KernelBench).

    project_json_src   msopgen op description (a list with one op: name, inputs, outputs, dtypes)
    host_tiling_src    op_host/<op>_tiling.h  (BEGIN_TILING_DATA_DEF ... REGISTER_TILING_DATA_CLASS)
    host_operator_src  op_host/<op>.cpp       (TilingFunc, InferShape, OpDef + OP_ADD)
    kernel_src         op_kernel/<op>.cpp     (extern "C" __global__ __aicore__ void <op>(...))
    python_bind_src    CppExtension/csrc/op.cpp (at::Tensor functions calling EXEC_NPU_CMD(aclnn<Op>, ...))
    model_src          ModelNew calling custom_ops_lib.<op>(...)

The candidate file is never executed: the six strings are read from its syntax tree (string
literals, optionally concatenated), so the outer file can hold nothing that runs. This module is
pure text processing and is imported by both sides of the trust boundary: the trusted parent parses
and validates a candidate before building it, the sandboxed worker reads the binding to call the
emulated operator with the binding's argument order and output allocation.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("project_json_src", "host_tiling_src", "host_operator_src", "kernel_src", "python_bind_src", "model_src")

# msopgen "type" names -> (C type for DTYPE_<NAME>, torch dtype name, ge::DataType code)
DTYPES: dict[str, tuple[str, str, int]] = {
    "float": ("float", "float32", 0),
    "float32": ("float", "float32", 0),
    "fp32": ("float", "float32", 0),
    "float16": ("half", "float16", 1),
    "half": ("half", "float16", 1),
    "fp16": ("half", "float16", 1),
    "bfloat16": ("bfloat16_t", "bfloat16", 27),
    "bf16": ("bfloat16_t", "bfloat16", 27),
    "int8": ("int8_t", "int8", 2),
    "int32": ("int32_t", "int32", 3),
    "uint8": ("uint8_t", "uint8", 4),
    "int16": ("int16_t", "int16", 6),
    "int64": ("int64_t", "int64", 9),
    "bool": ("bool", "bool", 12),
}
TORCH_TO_TYPE = {"float32": "float", "float16": "float16", "bfloat16": "bfloat16", "int8": "int8",
                 "int32": "int32", "uint8": "uint8", "int16": "int16", "int64": "int64", "bool": "bool"}


# C and C++ library functions declared at global scope by the headers the emulator's kernel side includes
# (<cmath>, <cstdlib>, <cstring>, <cstdio>): an extern "C" kernel of one of these names would conflict with
# the library's declaration, so the build renames such an entry (Project.kernel_symbol).
LIBC_NAMES = frozenset("""
acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs fdim floor fma fmax
fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10 log1p log2 logb lrint lround modf nan nearbyint
nextafter nexttoward pow remainder remquo rint round scalbln scalbn sin sinh sqrt tan tanh tgamma trunc abs labs llabs
div ldiv lldiv atof atoi atol atoll strtod strtof strtol strtoul rand srand malloc calloc realloc free abort exit
atexit getenv system bsearch qsort memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp
strlen strchr strrchr strstr strtok printf fprintf sprintf snprintf puts putchar getchar fopen fclose fread fwrite
remove rename perror select signal raise time clock sleep gamma j0 j1 jn y0 y1 yn drem significand exp10 pow10
""".split())


class ProjectError(ValueError):
    """The candidate is not a well-formed operator project (reported at the compile gate)."""


def pascal_to_snake(name: str) -> str:
    """AddCustom -> add_custom, LayerNormCustom -> layer_norm_custom (msopgen's file naming)."""
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


def snake_to_pascal(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p)


@dataclass
class Param:
    name: str
    types: list[str]  # msopgen type names, one per dtype combination
    param_type: str = "required"


@dataclass
class Project:
    sources: dict[str, str]
    op_type: str  # PascalCase, e.g. AddCustom
    inputs: list[Param]
    outputs: list[Param]
    kernel_name: str  # the extern "C" kernel entry, e.g. add_custom
    tiling_header: str  # file name the host source includes for the tiling data, e.g. add_custom_tiling.h
    bindings: dict[str, "Binding"] = field(default_factory=dict)  # python name -> binding function
    # A kernel whose parameters are not (inputs..., outputs..., workspace, tiling): a kernel-launch sample's entry
    # (add_custom(x, y, z), threshold(tiling, in, out)). Each parameter is named for what it receives: ("input", i),
    # ("output", j), ("workspace", 0) or ("tiling", 0); the build calls the entry through an adapter with the
    # operator's usual arguments (build.kernel_prelude). None for an operator-project kernel.
    launch_args: list[tuple[str, int]] | None = None

    @property
    def kernel_symbol(self) -> str:
        """The kernel entry's symbol in the built library: its name, unless that name is a C library
        function the emulator's headers declare (a kernel called asinh, div or fmax: on the device there is
        no libm to clash with; here the build renames the entry, build.kernel_prelude), or the adapter of a
        kernel-launch sample's entry."""
        if self.launch_args is not None:
            return f"evk_launch_{self.kernel_name}"
        return f"evk_kernel_{self.kernel_name}" if self.kernel_name in LIBC_NAMES else self.kernel_name

    @property
    def snake(self) -> str:
        return pascal_to_snake(self.op_type)

    @property
    def combos(self) -> int:
        return max([len(p.types) for p in self.inputs + self.outputs] or [1])

    def combo_types(self, k: int) -> dict[str, str]:
        """The msopgen type of every input/output in dtype combination ``k``."""
        out = {}
        for p in self.inputs + self.outputs:
            out[p.name] = p.types[k] if len(p.types) > 1 else p.types[0]
        return out

    def combo_for(self, dtypes: list[str]) -> int | None:
        """The combination whose inputs have these torch dtype names (None if there is none)."""
        for k in range(self.combos):
            types = self.combo_types(k)
            if all(DTYPES[types[p.name]][1] == d for p, d in zip(self.inputs, dtypes)):
                return k
        return None

    def macros(self, k: int) -> list[str]:
        """-DDTYPE_<NAME>=<c type> for combination k, as the msopgen build defines them."""
        return [f"-DDTYPE_{name.upper()}={DTYPES[t][0]}" for name, t in self.combo_types(k).items()]


# --- reading the six strings ----------------------------------------------------------------------

def _string_value(node: ast.AST, name: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _string_value(node.left, name) + _string_value(node.right, name)
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and len(node.args) == 1 \
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "dedent":
        import textwrap

        return textwrap.dedent(_string_value(node.args[0], name))
    raise ProjectError(f"candidate.py:{getattr(node, 'lineno', '?')}: {name} must be a string literal (a plain "
                       "or triple-quoted string, optionally concatenated with +); the verifier reads the six "
                       "strings without running the file")


def read_strings(source: str) -> dict[str, str]:
    """The six strings of a candidate file (ProjectError names what is missing or malformed)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProjectError(f"candidate.py:{exc.lineno}: error: {exc.msg}") from None
    found: dict[str, str] = {}
    for stmt in tree.body:
        targets: list[ast.expr] = []
        value = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for t in targets:
            if isinstance(t, ast.Name) and t.id in FIELDS:
                found[t.id] = _string_value(value, t.id)
    missing = [f for f in FIELDS if f not in found]
    if missing:
        raise ProjectError("the candidate does not define " + ", ".join(missing) + ". An Ascend C candidate is a "
                           "Python file defining six strings: " + ", ".join(FIELDS))
    return found


def _params(desc: Any, what: str) -> list[Param]:
    if not isinstance(desc, list) or not desc:
        raise ProjectError(f"project_json_src: {what} must be a non-empty list")
    out = []
    for i, d in enumerate(desc):
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not re.fullmatch(r"[A-Za-z_]\w*", d["name"]):
            raise ProjectError(f"project_json_src: {what}[{i}] needs a \"name\" that is a C identifier")
        types = d.get("type")
        if isinstance(types, str):
            types = [types]
        if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
            raise ProjectError(f"project_json_src: {what}[{i}] ({d['name']}) needs a \"type\" list, e.g. [\"float\"]")
        bad = [t for t in types if t not in DTYPES]
        if bad:
            raise ProjectError(f"project_json_src: {what}[{i}] ({d['name']}) has unsupported type(s) {bad}; "
                               f"supported: {', '.join(sorted(DTYPES))}")
        out.append(Param(d["name"], list(types), str(d.get("param_type", "required"))))
    return out


def parse_project_json(text: str) -> tuple[str, list[Param], list[Param]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProjectError(f"project_json_src is not valid JSON: {exc}") from None
    if isinstance(data, list):
        if len(data) != 1:
            raise ProjectError(f"project_json_src must describe exactly one op (a list of one object), got {len(data)}")
        data = data[0]
    if not isinstance(data, dict):
        raise ProjectError("project_json_src must be a list holding one op object")
    op = data.get("op")
    if not isinstance(op, str) or not re.fullmatch(r"[A-Z][A-Za-z0-9]*", op):
        raise ProjectError("project_json_src: \"op\" must be the PascalCase op type, e.g. \"AddCustom\"")
    inputs = _params(data.get("input_desc"), "input_desc")
    outputs = _params(data.get("output_desc"), "output_desc")
    names = [p.name for p in inputs + outputs]
    if len(set(names)) != len(names):
        raise ProjectError("project_json_src: input and output names must be distinct")
    lengths = {len(p.types) for p in inputs + outputs} - {1}
    if len(lengths) > 1:
        raise ProjectError("project_json_src: every \"type\" list must have the same length (one entry per dtype "
                           "combination) or a single entry")
    return op, inputs, outputs


_KERNEL_RE = re.compile(r'extern\s+"C"\s+(?:__global__\s+|__aicore__\s+)+void\s+([A-Za-z_]\w*)\s*\(')


def parse_candidate(source: str) -> Project:
    """Read and validate a candidate file; ProjectError carries compile-gate feedback."""
    sources = read_strings(source)
    op, inputs, outputs = parse_project_json(sources["project_json_src"])
    snake = pascal_to_snake(op)
    kernels = _KERNEL_RE.findall(sources["kernel_src"])
    # msopgen names GEMMCustom's kernel gemm_custom; projects made with other tools (and the EvoKernel paper's
    # operators) split every capital: g_e_m_m_custom. Both spellings name the same op's entry.
    per_capital = re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()
    if snake not in kernels and per_capital in kernels:
        snake = per_capital
    if snake not in kernels:
        found = f" (found: {', '.join(kernels)})" if kernels else ""
        raise ProjectError(f"kernel_src must define the kernel entry `extern \"C\" __global__ __aicore__ void "
                           f"{snake}(GM_ADDR ..., GM_ADDR workspace, GM_ADDR tiling)` for op {op}{found}")
    includes = re.findall(r'#\s*include\s*"([^"]+)"', sources["host_operator_src"])
    tiling = next((i for i in includes if "tiling" in i.rsplit("/", 1)[-1] and i.endswith(".h")), f"{snake}_tiling.h")
    project = Project(sources, op, inputs, outputs, snake, tiling)
    project.launch_args = launch_arguments(kernel_params(sources["kernel_src"], snake), inputs, outputs)
    project.bindings = parse_bindings(sources["python_bind_src"], op)
    return project


def kernel_params(kernel_src: str, name: str) -> list[str]:
    """The parameter names of the kernel entry ``name`` (``extern "C" __global__ __aicore__ void name(...)``)."""
    text = strip_comments(kernel_src)
    m = re.search(r'extern\s+"C"\s+(?:__global__\s+|__aicore__\s+)+void\s+' + re.escape(name) + r"\s*\(", text)
    if not m:
        return []
    close = _match(text, m.end() - 1, "(", ")")
    names = []
    for decl in split_args(text[m.end():close]):
        ident = re.search(r"([A-Za-z_]\w*)\s*(?:\[\s*\])?\s*$", decl.split("=")[0].strip())
        if ident and decl.strip() != "void":
            names.append(ident.group(1))
    return names


def launch_arguments(params: list[str], inputs: list[Param], outputs: list[Param]) -> list[tuple[str, int]] | None:
    """How a kernel-launch sample's entry takes the operator's arguments, by parameter name (None for an
    operator-project kernel: its parameters are the inputs, the outputs, the workspace and the tiling, in that
    order, whatever their names, as CANN calls them). A kernel with another number of parameters is a
    kernel-launch entry when its parameters name every input and output of the json once, the others being the
    workspace (``workspace``, ``usrWorkspace``, ``ws``...) or the tiling (a name with ``tiling``); otherwise
    (a kernel that does not match its json) it is called by position too, and the run says what goes wrong."""
    if not params or len(params) == len(inputs) + len(outputs) + 2:
        return None
    where = {p.name: ("input", i) for i, p in enumerate(inputs)}
    where.update({p.name: ("output", j) for j, p in enumerate(outputs)})
    args: list[tuple[str, int]] = []
    for name in params:
        if name in where:
            args.append(where[name])
        elif "tiling" in name.lower():
            args.append(("tiling", 0))
        elif re.fullmatch(r"(?i)(usr|user|sys)?_?(workspace|work_space|ws)(_?gm)?", name):
            args.append(("workspace", 0))
        else:
            return None  # not a kernel-launch entry the names describe: called by position, as before
    if any(where[n] not in args for n in where) or len(set(args)) != len(args):
        return None
    return args


# --- the binding (python_bind_src) ------------------------------------------------------------------
# Read, not compiled: the real file needs torch_npu's headers. What matters is what the binding does
# for the operator: which Python-visible functions exist, which tensors it allocates as outputs (with
# which shape and dtype), and the argument order of EXEC_NPU_CMD (inputs, attributes, outputs).

@dataclass
class Binding:
    cpp_name: str
    params: list[tuple[str, str]]  # (kind "tensor"|"scalar"|"list"|"string", name)
    body: list[str]  # statements, comments removed
    line: int


def strip_comments(text: str) -> str:
    """Comments removed, read as the compiler reads the text (raw strings, literals, splices: source_text)."""
    from evokernel.source_text import strip_comments as strip

    return strip(text)


def _match(text: str, i: int, open_ch: str, close_ch: str) -> int:
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_ch:
            depth += 1
        elif text[j] == close_ch:
            depth -= 1
            if depth == 0:
                return j
    raise ProjectError(f"python_bind_src: unbalanced {open_ch}{close_ch}")


def split_args(text: str) -> list[str]:
    """Split on top-level commas (brackets, braces, parentheses and angle brackets of templates nest)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _param_kind(decl: str) -> tuple[str, str]:
    decl = decl.split("=")[0].strip()
    m = re.search(r"([A-Za-z_]\w*)\s*$", decl)
    if not m:
        raise ProjectError(f"python_bind_src: cannot read the parameter `{decl}`")
    name, typ = m.group(1), decl[: m.start()]
    if re.search(r"\bTensor\b", typ) and not re.search(r"TensorList|vector", typ):
        return "tensor", name
    if re.search(r"\b(?:std::)?string\b|string_view|\bchar\s*\*", typ):
        return "string", name  # a string attribute (CANN's Attr(...).String)
    if re.search(r"IntArrayRef|vector|ArrayRef", typ):
        return "list", name
    if re.search(r"\b(double|float|int|int64_t|int32_t|bool|long|Scalar)\b", typ):
        return "scalar", name
    raise ProjectError(f"python_bind_src: unsupported parameter type in `{decl}` (use at::Tensor, double, "
                       "int64_t, bool, std::string or at::IntArrayRef)")


_RET_TYPE = r"(?:(?:at|torch)::Tensor|\bTensor|std::vector\s*<\s*(?:at|torch)::Tensor\s*>|std::tuple\s*<[^;{}()]*>|\bauto)"


def parse_bindings(text: str, op_type: str) -> dict[str, Binding]:
    clean = strip_comments(text)
    defs = re.findall(r'\bm\.def\s*\(\s*"([A-Za-z_]\w*)"\s*,\s*&?\s*([A-Za-z_][\w:]*)', clean)
    if not defs:
        raise ProjectError("python_bind_src: no `m.def(\"<name>\", &<function>, ...)` inside PYBIND11_MODULE; "
                           "the model calls the functions the binding exports")
    out: dict[str, Binding] = {}
    for py_name, cpp_name in defs:
        cpp_name = cpp_name.split("::")[-1]
        m = re.search(_RET_TYPE + r"\s*&?\s*\b" + re.escape(cpp_name) + r"\s*\(", clean)
        if not m:
            raise ProjectError(f"python_bind_src: m.def exports `{cpp_name}` but no function `{cpp_name}` returning "
                               "at::Tensor (or std::vector/std::tuple of tensors) is defined")
        open_paren = m.end() - 1
        close = _match(clean, open_paren, "(", ")")
        brace = clean.find("{", close)
        if brace < 0 or clean[close + 1:brace].strip() not in ("", "const"):
            raise ProjectError(f"python_bind_src: cannot find the body of `{cpp_name}`")
        end = _match(clean, brace, "{", "}")
        params = [_param_kind(p) for p in split_args(clean[open_paren + 1:close]) if p.strip() and p.strip() != "void"]
        body = [s.strip() for s in _statements(clean[brace + 1:end]) if s.strip()]
        out[py_name] = Binding(cpp_name, params, body, clean[:m.start()].count("\n") + 1)
    if not any("EXEC_NPU_CMD" in s for b in out.values() for s in b.body):
        raise ProjectError(f"python_bind_src: no EXEC_NPU_CMD(aclnn{op_type}, ...) call in the exported function(s)")
    return out


_BLOCK_STMT = re.compile(r"^(?:for|if|while|else)\b")


def _statements(body: str) -> list[str]:
    """Top-level statements of a function body (split on ; outside brackets/braces, and after the closing
    brace of a `for`/`if`/`while` block unless an `else` follows)."""
    out, depth, cur = [], 0, []
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == ";" and depth == 0 and not (_BLOCK_STMT.match("".join(cur).strip())
                                             and re.match(r"\s*else\b", body[i + 1:])):
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
        if ch == "}" and depth == 0 and _BLOCK_STMT.match("".join(cur).strip()) \
                and not re.match(r"\s*else\b", body[i + 1:]):
            out.append("".join(cur))
            cur = []
    if "".join(cur).strip():
        out.append("".join(cur))
    return out
