"""The kernel-only candidate form: the model writes one C++ function, the trusted side writes the rest.

A weak model's correct C++ was often sunk by one line of Python glue (``x.new_empty_like(x)``, a wrong row count,
a missing return). The task already says everything the glue needs, so here the trusted side:

1. **declares** the entry from the task (:func:`declare`): it builds ``Model`` and its inputs on the meta device
   and runs ``forward`` there, so it knows every input, parameter and output with its shape and dtype without
   computing anything. Tensors become pointers (``const float*`` for inputs and parameters, ``float*`` for
   outputs, by dtype), every distinct size becomes an ``int64_t`` parameter (named after the task's module
   constant of that value when exactly one has it: ``batch_size``, ``dim``), so the kernel reads sizes at run
   time rather than baking numbers in;
2. **asks** the model for the definition of that one function (:attr:`KernelSpec.signature`, with the layout of
   every tensor in :meth:`KernelSpec.describe`);
3. **wraps** the model's C++ in a candidate file (:meth:`KernelSpec.candidate`): the standard includes, the C++,
   ``load_cpp``, ``ModelNew.__init__`` rewritten from the reference's (same parameters, same order, same seeded
   draws), and a ``forward`` that makes the inputs and parameters contiguous, allocates every output with
   ``torch.empty``, calls the kernel and returns the output(s). This glue is the kind the verifier's glue
   allow-list accepts (tests run it through ``check_glue``); the verifier judges the candidate as it judges any
   other: nothing here is trusted by the verifier.

Tasks this form cannot express (a non-tensor forward argument, a dtype ``load_cpp`` has no pointer type for, a
reference that does not run on the meta device) raise :class:`KernelFormError`; the LLM generator then falls back
to the full-candidate form for that task.
"""
from __future__ import annotations

import ast
import inspect
import keyword
import re
import threading
import types
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["ENTRY", "KERNEL_MARK", "KernelArg", "KernelFormError", "KernelSpec", "declare", "kernel_of_candidate"]

ENTRY = "kernel"  # the entry function's name
# the line that separates the trusted includes from the model's C++ in a generated candidate
KERNEL_MARK = "// ---- the kernel (written by the model) ----"
PRELUDE = ("#include <cstdint>\n#include <cstddef>\n#include <cmath>\n#include <cstring>\n#include <algorithm>\n"
           "#include <limits>\n")

_CTYPES = {torch.float32: "float", torch.float64: "double", torch.int64: "int64_t", torch.int32: "int32_t",
           torch.int16: "int16_t", torch.int8: "int8_t", torch.uint8: "uint8_t", torch.bool: "bool"}
_DTYPE_NAMES = {torch.float32: "torch.float32", torch.float64: "torch.float64", torch.int64: "torch.int64",
                torch.int32: "torch.int32", torch.int16: "torch.int16", torch.int8: "torch.int8",
                torch.uint8: "torch.uint8", torch.bool: "torch.bool"}
_CACHE: dict[str, KernelSpec] = {}
_LOCK = threading.RLock()


class KernelFormError(ValueError):
    """The task cannot be expressed as one declared kernel (the full-candidate form is used instead)."""


@dataclass(frozen=True)
class KernelArg:
    name: str  # the C parameter's name
    ctype: str  # float, double, int64_t, ...
    role: str  # input, param, output, size
    glue: str  # the Python expression the generated forward passes for it
    shape: tuple[str, ...] = ()  # tensors: each dimension as a size parameter's name or a number
    origin: str = ""  # tensors: where it comes from (forward argument i, self.linear.weight, output i)

    @property
    def pointer(self) -> bool:
        return self.role != "size"

    def c_decl(self) -> str:
        if self.role == "size":
            return f"int64_t {self.name}"
        const = "const " if self.role in ("input", "param") else ""
        return f"{const}{self.ctype}* {self.name}"


@dataclass(frozen=True)
class KernelSpec:
    """The declared entry of one task and the glue around it."""

    task_key: str
    args: tuple[KernelArg, ...]
    forward_params: tuple[str, ...]
    init_source: str  # ModelNew.__init__ (indented 4), from the reference's
    outputs: tuple[tuple[str, tuple[str, ...], str], ...]  # (name, shape glue expressions, torch dtype name)
    returns_tuple: bool = False
    returns_list: bool = False  # the reference returns a list (its structure is compared: trials.py)
    entry: str = ENTRY
    sizes: dict[str, int] = field(default_factory=dict)  # size parameter -> its value at the task's sizes

    @property
    def signature(self) -> str:
        return f'extern "C" void {self.entry}({", ".join(a.c_decl() for a in self.args)})'

    def describe(self) -> str:
        """A comment block: every tensor's shape and role, the sizes' values."""
        lines = []
        for a in self.args:
            if a.role == "size":
                continue
            dims = "".join(f"[{d}]" for d in a.shape) or "[1] (a scalar: one element)"
            what = {"input": "input, read only", "param": "parameter, read only",
                    "output": "output: write every element"}[a.role]
            lines.append(f"//   {a.name}: {a.ctype}{dims}  ({what}; {a.origin})")
        sizes = ", ".join(f"{k} = {v}" for k, v in self.sizes.items())
        lines.append("// All tensors are contiguous, row-major (the last index varies fastest).")
        if sizes:
            lines.append(f"// Sizes are passed at run time (this task: {sizes}); read them, never hard-code them.")
        return "\n".join(lines)

    def candidate(self, kernel_cpp: str) -> str:
        """The whole candidate file around ``kernel_cpp`` (the model's C++: the entry and its helpers)."""
        cpp = PRELUDE + "\n" + KERNEL_MARK + "\n" + kernel_cpp.strip("\n") + "\n"
        init = self.init_source or "    def __init__(self):\n        super().__init__()"
        body: list[str] = [f"{p} = {p}.contiguous()" for p in self.forward_params]
        params = [a for a in self.args if a.role == "param"]
        body += [f"{a.name} = {a.glue}.contiguous()" for a in params]
        for name, shape, dtype in self.outputs:
            dims = "(" + ", ".join(shape) + ("," if len(shape) == 1 else "") + ")"
            body.append(f"{name} = torch.empty({dims}, dtype={dtype})")
        call_args = [a.name if a.role in ("input", "param", "output") else a.glue for a in self.args]
        body.append(f"lib.{self.entry}({', '.join(call_args)})")
        names = [o[0] for o in self.outputs]
        if self.returns_list:
            body.append("return [" + ", ".join(names) + "]")
        else:  # a tuple of one is `y,` (the verifier compares the output's structure with the reference's)
            body.append("return " + (", ".join(names) + ("," if len(names) == 1 else "") if self.returns_tuple
                                     else names[0]))
        fwd = "\n".join("        " + ln for ln in body)
        return (f'"""Kernel-only candidate: the model wrote `{self.entry}`; the glue was generated from the task."""\n'
                "import torch\nimport torch.nn as nn\n\nfrom evokernel.cpu import load_cpp\n\n"
                f"CPP_SOURCE = {_literal(cpp)}\n\nlib = load_cpp(CPP_SOURCE)\n\n\n"
                f"class ModelNew(nn.Module):\n{init}\n\n"
                f"    def forward(self, {', '.join(self.forward_params)}):\n{fwd}\n")


def _literal(cpp: str) -> str:
    if '"""' not in cpp and not cpp.endswith("\\"):
        return 'r"""\n' + cpp + '"""'
    return repr(cpp)


def kernel_of_candidate(source: str) -> str | None:
    """The C++ a kernel-only candidate's model wrote (after :data:`KERNEL_MARK`); for any other candidate the
    whole C++ source string it builds with ``load_cpp``; None when there is none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    strings: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    strings[t.id] = stmt.value.value
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "load_cpp" and node.args:
            arg = node.args[0]
            text = strings.get(arg.id) if isinstance(arg, ast.Name) else (
                arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None)
            if text is not None:
                _, mark, rest = text.partition(KERNEL_MARK)
                return (rest if mark else text).strip("\n") + "\n"
    return None


# ------------------------------------------------------------------------------------------------ declaring

def _ident(text: str) -> str:
    name = re.sub(r"\W+", "_", text).strip("_") or "t"
    if name[0].isdigit():
        name = "t" + name
    return name + "_" if keyword.iskeyword(name) or name in _RESERVED else name


# C/C++ keywords and names a weak model would collide with
_RESERVED = {"int", "float", "double", "char", "long", "short", "void", "const", "auto", "new", "delete", "default",
             "register", "signed", "unsigned", "static", "struct", "union", "switch", "case", "this", "template",
             "typename", "inline", "volatile", "operator", "kernel", "out", "size_t", "int64_t", "std", "main", "exp",
             "log", "max", "min", "sqrt", "abs", "fabs", "tanh", "erf", "pow", "signal", "time", "index", "bool"}


def _exec_task(task: Any, source: str | None = None) -> types.ModuleType:
    module = types.ModuleType(f"evk_kernel_form_{task.key}")
    module.__file__ = str(task.path)
    try:
        exec(compile(source if source is not None else task.source, str(task.path), "exec"), module.__dict__)
    except Exception as exc:  # noqa: BLE001 - a task that does not import cannot be declared
        raise KernelFormError(f"executing the task source failed: {type(exc).__name__}: {exc}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise KernelFormError(f"the task does not define {name}")
    return module


def _forward_names(model_cls: type, n: int) -> list[str]:
    try:
        params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) != n:
        names = [f"x{i}" for i in range(n)]
    return [_ident(nm) if nm.startswith("_") else nm for nm in names]


def _param_glue(path: str) -> str:
    """``self.layers.0.weight`` -> ``self.layers[0].weight``."""
    out = "self"
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def _run(task: Any, source: str | None = None) -> tuple[Any, list[Any], Any]:
    """``(model, inputs, result)`` of the task's reference built and run on the meta device (no computation). A task
    file may set process-wide state (the seed, the default dtype): it is put back afterwards, and one task runs at
    a time (tasks side by side share this process)."""
    with _LOCK:
        saved = (torch.get_default_dtype(), torch.random.get_rng_state())
        try:
            module = _exec_task(task, source)
            with torch.device("meta"), torch.no_grad():
                model = module.Model(*list(module.get_init_inputs()))
                inputs = list(module.get_inputs())
                result = model(*inputs)
        except KernelFormError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise KernelFormError(f"running the reference on the meta device failed: {type(exc).__name__}: "
                                  f"{exc}") from None
        finally:
            torch.set_default_dtype(saved[0])
            torch.random.set_rng_state(saved[1])
    return model, inputs, result


def _tensors_of(model: Any, inputs: list[Any], result: Any) -> list[tuple[str, torch.Tensor]]:
    """(kind/path, tensor) of the inputs, the parameters and buffers, the outputs, in the entry's order."""
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    params = [*model.named_parameters(), *((n, b) for n, b in model.named_buffers() if b is not None)]
    return ([("input", x) for x in inputs] + [(path, p) for path, p in params] + [("output", o) for o in outs])


def _dependence(task: Any, base: list[tuple[int, ...]]) -> dict[str, set[tuple[int, int]]]:
    """Which tensor dimensions (tensor index, axis) each integer module constant of the task sets: the reference
    is run again with that constant doubled and the dimensions that moved are recorded. A constant whose
    doubling breaks the task (a divisibility rule) or changes the tensors' count or ranks is left out."""
    from evokernel.tasks.task import _apply_overrides

    out: dict[str, set[tuple[int, int]]] = {}
    for cname, value in (getattr(task, "constants", None) or {}).items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 2 or not str(cname).isidentifier():
            continue
        try:
            source = _apply_overrides(task.source, ast.parse(task.source), {cname: 2 * value}, task.path)
            shapes = [tuple(int(d) for d in t.shape) for _, t in _tensors_of(*_run(task, source))]
        except Exception:  # noqa: BLE001 - the perturbed task is not valid: this constant stays unnamed
            continue
        if [len(s) for s in shapes] != [len(s) for s in base]:
            continue
        moved = {(i, a) for i, (s0, s1) in enumerate(zip(base, shapes)) for a, (d0, d1) in enumerate(zip(s0, s1))
                 if d0 != d1}
        if moved:
            out[cname] = moved
    return out


def declare(task: Any) -> KernelSpec:
    """The kernel entry of ``task`` (cached by the task's key); :class:`KernelFormError` when it has none."""
    if task.key in _CACHE:
        return _CACHE[task.key]
    model, inputs, result = _run(task)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise KernelFormError(f"get_inputs()[{i}] is a {type(x).__name__}, not a tensor")
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
        raise KernelFormError("forward does not return a tensor or a tuple of tensors")
    tensors: list[tuple[str, str, str, torch.Tensor, str]] = []  # (c name, role, glue, tensor, origin)
    used: set[str] = set()

    def unique(name: str) -> str:
        base, k = name, 1
        while name in used:
            k += 1
            name = f"{base}{k}"
        used.add(name)
        return name

    fwd = _forward_names(type(model), len(inputs))
    for i, (nm, x) in enumerate(zip(fwd, inputs)):
        used.add(nm)
        tensors.append((nm, "input", nm, x, f"forward argument {i + 1}"))
    for path, p in [*model.named_parameters(), *((n, b) for n, b in model.named_buffers() if b is not None)]:
        glue = _param_glue(path)
        tensors.append((unique(_ident(path.replace(".", "_"))), "param", glue, p, glue))
    out_names = ["out"] if len(outs) == 1 else [f"out{i}" for i in range(len(outs))]
    for k, (nm, o) in enumerate(zip(out_names, outs)):
        used.add(nm)
        tensors.append((nm, "output", nm, o, "returned" if len(outs) == 1 else f"returned as output {k + 1}"))
    for nm, _, _, t, _ in tensors:
        if t.dtype not in _CTYPES:
            raise KernelFormError(f"{nm} has dtype {t.dtype}, which load_cpp has no pointer type for")

    # sizes: a dimension that exactly one module constant sets, and that has its value, is that constant
    # (``batch_size``, ``dim1``); any other dimension (derived: a convolution's output height; or a literal of
    # get_inputs) is one parameter per (value, constants it depends on), named after its first tensor
    base = [tuple(int(d) for d in t.shape) for *_, t, _ in tensors]
    dep = _dependence(task, base)
    constants = getattr(task, "constants", None) or {}
    by_key: dict[tuple[Any, ...], str] = {}
    glue_of: dict[str, str] = {}
    values: dict[str, int] = {}
    args: list[KernelArg] = []
    for ti, (nm, role, glue, t, origin) in enumerate(tensors):
        dims: list[str] = []
        for axis, v in enumerate(base[ti]):
            setters = tuple(sorted(c for c, moved in dep.items() if (ti, axis) in moved))
            if len(setters) == 1 and constants.get(setters[0]) == v:
                key: tuple[Any, ...] = ("const", setters[0])
                want = setters[0]
            else:
                key, want = ("dim", v, setters), f"{nm}_size{axis}"
            if key not in by_key:
                ok = want.isidentifier() and not keyword.iskeyword(want) and want not in _RESERVED \
                    and not want.startswith("_")
                size = unique(want if ok else _ident(want))
                by_key[key] = size
                values[size] = v
                glue_of[size] = f"{glue}.shape[{axis}]" if role != "output" else str(v)
            dims.append(by_key[key])
        args.append(KernelArg(nm, _CTYPES[t.dtype], role, glue, tuple(dims), origin))
    size_args = [KernelArg(s, "int64_t", "size", glue_of[s]) for s in by_key.values()]
    outputs = tuple((a.name, tuple(glue_of[d] for d in a.shape), _DTYPE_NAMES[t.dtype])
                    for a, (*_, t, _) in zip(args, tensors) if a.role == "output")
    spec = KernelSpec(task_key=task.key, args=tuple(args + size_args), forward_params=tuple(fwd),
                      init_source=_init(type(model)), outputs=outputs,
                      returns_tuple=isinstance(result, (tuple, list)), returns_list=isinstance(result, list),
                      sizes=values)
    _CACHE[task.key] = spec
    return spec


def _init(model_cls: type) -> str:
    """ModelNew.__init__, indented for the class body: the reference's, rewritten as the template generator
    rewrites it (``super()``, seeded draws without torch compute names, module constants inlined)."""
    from evokernel.generators.template.front.graph import AnalysisError
    from evokernel.generators.template.front.trace import _init_source

    try:
        src, _ = _init_source(model_cls)
    except AnalysisError as exc:
        raise KernelFormError(str(exc)) from None
    return "\n".join("    " + ln for ln in src.splitlines()) if src else ""
