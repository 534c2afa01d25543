"""The allow-list's rules for attribute reads and calls, by the kind of what they are applied to (see
`ast_allowlist`): what ``torch.<name>``, ``nn.<name>``, ``x.<method>()``, ``self.<name>``,
``lib.<function>(...)`` and the builtins may be in each context."""
from __future__ import annotations

import ast
import re
import string

from evokernel.verifier.trusted import nn_vocabulary as vocab
from evokernel.verifier.trusted.ast_allowlist import (
    BAD, BUILTINS_ON_VALUES, COMPUTE_HINT, EXCEPTIONS, LAYER, LOAD_CPP, LOAD_INLINE, LOAD_INLINE_KWARGS, NATIVE,
    NATIVE_FN, NS_CPPEXT, NS_INIT, NS_MATH, NS_NN, NS_TORCH, NS_TYPING, SELF, STR_METHODS, TENSOR,
    TENSOR_MULTI_METHODS, TENSOR_VALUE_ATTRS, TENSOR_VALUE_METHODS, TENSOR_VIEW_ATTRS, TENSOR_VIEW_METHODS,
    TENSORS, TORCH_ALLOC, TORCH_FACTORIES, TORCH_TYPE, TORCH_VALUES, VALUE, Env, GlueChecker,
)

MATH_VALUES = {"pi", "e", "inf", "nan", "tau"}
# tensor methods __init__ may use on parameters it is building (weight preparation: untimed, no inputs)
INIT_TENSOR_METHODS = TENSOR_VIEW_METHODS | TENSOR_VALUE_METHODS | {
    "copy_", "normal_", "uniform_", "fill_", "zero_", "mul_", "add_", "sub_", "div_", "clamp_", "float", "double",
    "half", "to", "t_", "requires_grad_", "abs", "sqrt", "exp", "log", "sum", "mean", "norm", "transpose_", "sign",
    "neg", "reciprocal", "pow", "mul", "add", "sub", "div", "clamp", "item"}

# Tensor methods real model replies use for plumbing, with what to write instead (the generic message,
# "PyTorch compute in forward", misled a 1.5B model that only wanted a pointer)
TENSOR_METHOD_HINTS = {
    "data_ptr": "Tensor.data_ptr is not needed and not allowed: pass the tensor itself (lib.f(x, out, n)); "
                "the native library receives its data pointer",
    "numpy": "Tensor.numpy is not allowed (no NumPy in forward): pass the tensor itself to the native library",
    "tolist": "Tensor.tolist is not allowed: pass the tensor itself to the native library",
    "item": "Tensor.item is not allowed in forward: read sizes with .shape / .numel() and pass tensors to the "
            "native library",
}


def attribute(c: GlueChecker, node: ast.Attribute, env: Env) -> str:
    """The kind of ``<value>.<attr>`` read (not called)."""
    name = node.attr
    if name.startswith("_"):
        return c.refuse(node, "glue-private", f"`{c.src(node)}`",
                        "private and dunder attributes reach the interpreter's and the verifier's internals")
    base = c.expr(node.value, env)
    if base == BAD:
        return BAD
    if base == NS_TORCH:
        if name in TORCH_VALUES:
            return VALUE
        if name == "Tensor" and c.context != "init":
            return TORCH_TYPE
        if name in (TORCH_FACTORIES if c.context == "init" else TORCH_ALLOC):
            return f"torchfn:{name}"
        if name == "nn":
            return NS_NN
        if name == "utils":
            return "torch.utils"
        return c.refuse(node, "glue-torch", f"torch.{name}",
                        f"torch.{name} is not an allowed helper; " + (COMPUTE_HINT if c.context == "forward" else
                        "__init__ may use torch's tensor factories and dtypes only"))
    if base == "torch.utils" and name == "cpp_extension":
        return NS_CPPEXT
    if base == NS_CPPEXT and name == "load_inline":
        return LOAD_INLINE
    if base == NS_NN:
        if name == "init" and c.context == "init":
            return NS_INIT
        if name in ("Module", "Parameter") or vocab.is_layer(name):
            return f"class:{name}"
        return c.refuse(node, "glue-torch", f"nn.{name}",
                        "torch.nn.functional and other nn helpers compute with PyTorch; use nn layers only as "
                        "parameter containers in __init__ and compute in native code")
    if base == NS_INIT and name in vocab.init_functions():
        return f"init:{name}"
    if base == NS_MATH:
        return VALUE if name in MATH_VALUES else f"math:{name}"
    if base == NS_TYPING:
        return NS_TYPING
    if base == SELF:
        return self_attribute(c, node, env)
    if base == LAYER:
        if vocab.is_tensor_attribute(name):
            return TENSOR
        if name in vocab.config_attributes():
            return VALUE
        if vocab.is_sublayer_attribute(name):
            return LAYER  # a child of one of torch.nn's composite layers (self.attn.out_proj): a layer again
        return c.refuse(node, "glue-layer", f"`{c.src(node)}`",
                        "read a layer's parameters (weight, bias, buffers), its configuration and the sub-layers "
                        "torch.nn registers in it only; never call it")
    if base == TENSOR:
        if name in TENSOR_VALUE_ATTRS:
            return VALUE
        if name in TENSOR_VIEW_ATTRS:
            return TENSOR
        if name in TENSOR_VIEW_METHODS | TENSOR_VALUE_METHODS | TENSOR_MULTI_METHODS or (
                c.context == "init" and name in INIT_TENSOR_METHODS):
            return f"method:{name}"
        hint = TENSOR_METHOD_HINTS.get(name)
        if hint:  # not compute, but a habit of models the candidate format has no use for: say what to do
            return c.refuse(node, "glue-compute", f"`{c.src(node)}`", hint)
        return c.refuse(node, "glue-compute", f"`{c.src(node)}`",
                        f"Tensor.{name} is not a view, a size or an allocation: " + COMPUTE_HINT)
    if base == NATIVE:
        if c.exported is not None and name not in c.exported:
            return c.refuse(node, "custom-ops", f"custom_ops_lib.{name}",
                            f"the binding exports {', '.join(sorted(c.exported))}; call only those")
        return NATIVE_FN
    if base == VALUE:
        if name in STR_METHODS and c.is_string(node.value):
            return f"strmethod:{name}"
        return c.refuse(node, "glue-structure", f"`{c.src(node)}`",
                        "plain values have no attributes to use here (string methods apply to strings only)")
    if base == TORCH_TYPE:
        return c.refuse(node, "glue-torch", f"`{c.src(node)}`",
                        "torch.Tensor may only be named (isinstance, annotations); its methods compute with PyTorch")
    return c.refuse(node, "glue-structure", f"`{c.src(node)}` (an attribute of {base})",
                    "this attribute is not part of what a candidate may use")


def self_attribute(c: GlueChecker, node: ast.Attribute, env: Env) -> str:
    name = node.attr
    if name == "training":
        return VALUE
    if name in c.self_attrs:
        return c.self_attrs[name]
    if name in ("register_buffer", "register_parameter") and c.context == "init":
        return f"register:{name}"
    if c.context == "init":
        return c.refuse(node, "glue-structure", f"self.{name} before it is set",
                        "set an attribute before reading it")
    return c.refuse(node, "glue-structure", f"self.{name}",
                    "forward may read only attributes __init__ set (parameters, layers, sizes, the native library); "
                    "calling self's methods or nn.Module's machinery is not allowed")


def plain_format_string(fmt: ast.expr) -> str:
    """Why ``fmt.format(...)`` is not allowed ('' = it is): the format string must be a literal whose fields name an
    argument by position or keyword only. A field like ``{0.__file__[3]}`` walks attributes and items of its
    argument, past every rule on attribute access (red-team rt3_format_field_path_leak spelled a host path that way)."""
    if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
        return "str.format applies to a literal format string only"
    pending = [fmt.value]
    while pending:
        try:
            fields = list(string.Formatter().parse(pending.pop()))
        except ValueError as exc:
            return f"a malformed format string ({exc})"
        for _, name, spec, _ in fields:
            if name is not None and not re.fullmatch(r"\w*", name):
                return f"format fields name an argument only ({{{name}}} reaches into it); format the value itself"
            if spec:
                pending.append(spec)
    return ""


def call(c: GlueChecker, node: ast.Call, env: Env) -> str:
    f = node.func
    fkind = c.expr(f, env)
    if fkind == BAD:
        for a in node.args + [k.value for k in node.keywords]:
            c.expr(a, env)
        return BAD
    args = [c.expr(a, env) for a in node.args]
    kwargs = {k.arg: c.expr(k.value, env) for k in node.keywords}
    if BAD in args or BAD in kwargs.values():
        return BAD
    every = args + list(kwargs.values())

    if fkind.startswith("builtin:"):
        return builtin(c, node, fkind[8:], args, kwargs)
    if fkind == NATIVE_FN:
        for a, k in zip(node.args, args):
            if k not in (TENSOR, TENSORS, VALUE):
                return c.refuse(a, "glue-structure", f"passing a {k} to a native function",
                                "pass tensors and plain values to native functions")
        # whatever native code returns may be a tensor (a load_inline function returns at::Tensor), in __init__ as in
        # forward: typed a plain value there, it let `self.a @ self.b` pass as arithmetic on numbers (red-team
        # rt3_value_kind_matmul_blind)
        return TENSORS
    if fkind in (LOAD_CPP, LOAD_INLINE):
        if c.context != "module":
            return c.refuse(node, "glue-structure", f"{fkind}() inside ModelNew",
                            "build the native code once, at module level")
        if fkind == LOAD_INLINE:
            bad = [k for k in kwargs if k not in LOAD_INLINE_KWARGS]
            if bad or node.args:
                return c.refuse(node, "glue-build", f"load_inline with {', '.join(bad) or 'positional arguments'}",
                                "call load_inline with keyword arguments name, cpp_sources, functions, extra_cflags "
                                "(and verbose/extra_ldflags, which the verifier ignores) only")
        if any(k != VALUE for k in every):
            return c.refuse(node, "glue-build", f"`{c.src(node)}`", "pass the source and flags as strings")
        return NATIVE
    if fkind == "method:item" or (fkind.startswith("method:") and fkind[7:] in TENSOR_VALUE_METHODS):
        if any(k != VALUE for k in every):
            return c.refuse(node, "glue-structure", f"`{c.src(node)}`", "size queries take integers only")
        return VALUE
    if fkind.startswith("method:"):
        name = fkind[7:]
        if c.context == "forward":
            for k in every:
                if k not in (VALUE,) and not (name in ("expand_as", "view_as") and k == TENSOR):
                    return c.refuse(node, "glue-compute", f"`{c.src(node)}`",
                                    f"Tensor.{name} takes sizes here; passing tensors to tensor methods is " + COMPUTE_HINT)
        return TENSORS if name in TENSOR_MULTI_METHODS else TENSOR
    if fkind.startswith("strmethod:"):
        if any(k != VALUE for k in every):
            return c.refuse(node, "glue-structure", f"`{c.src(node)}`",
                            "string methods take plain values (numbers, strings, sizes) only")
        if fkind == "strmethod:format":
            why = plain_format_string(node.func.value)  # type: ignore[attr-defined]
            if why:
                return c.refuse(node, "glue-structure", f"`{c.src(node)}`", why)
        return VALUE
    if fkind.startswith("math:"):
        if any(k != VALUE for k in every):
            return c.refuse(node, "glue-compute", f"`{c.src(node)}`", "math functions take plain numbers only")
        return VALUE
    if fkind.startswith("class:"):
        return construct(c, node, fkind[6:], every)
    if fkind.startswith("init:"):
        if c.context != "init":
            return c.refuse(node, "glue-torch", "nn.init in forward", "initialise parameters in __init__")
        return TENSOR
    if fkind.startswith("register:"):
        if len(args) < 2 or args[0] != VALUE or args[1] not in (TENSOR, VALUE):
            return c.refuse(node, "glue-structure", f"`{c.src(node)}`",
                            "register_buffer(name, tensor) with a string name")
        if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            c.self_attrs[node.args[0].value] = TENSOR
        return VALUE
    if fkind == LAYER:
        return c.refuse(node, "glue-layer", f"calling `{c.src(f)}`",
                        "calling an nn layer runs PyTorch's implementation: read its weight/bias and compute in "
                        "native code")
    if fkind.startswith("torchfn:"):
        return torch_factory(c, node, fkind[8:], args, kwargs)
    if isinstance(f, ast.Attribute) and f.attr in TORCH_VALUES and fkind == VALUE:
        # torch.Size(...), torch.device("cpu"), torch.dtype checks
        if any(k != VALUE for k in every):
            return c.refuse(node, "glue-structure", f"`{c.src(node)}`", "takes plain values only")
        return VALUE
    return c.refuse(node, "glue-structure", f"calling `{c.src(f)}` ({fkind})", "this call is not allowed")


ALLOC_KWARGS = {"dtype", "device", "layout", "memory_format", "requires_grad", "pin_memory", "out", "size",
                "fill_value", "generator"}


def torch_factory(c: GlueChecker, node: ast.Call, name: str, args: list[str], kwargs: dict) -> str:
    """torch.empty(...) & co. in forward (shapes, dtype, device; *_like of a tensor); in __init__ also the
    random and constant factories (their arguments are sizes and values)."""
    like = name.endswith("_like")
    for i, k in enumerate(args):
        if k == VALUE or (like and i == 0 and k == TENSOR) or (c.context == "init" and k == TENSOR):
            continue
        return c.refuse(node, "glue-compute", f"torch.{name}({c.src(node.args[i])})",
                        "allocation takes sizes (and, for *_like, the tensor whose shape it copies)")
    for key, k in kwargs.items():
        if key not in ALLOC_KWARGS or k != VALUE or key == "out":
            return c.refuse(node, "glue-compute", f"torch.{name}(..., {key}=...)",
                            "allocation keywords are dtype, device, layout, memory_format and requires_grad")
    return TENSOR


def construct(c: GlueChecker, node: ast.Call, cls: str, every: list[str]) -> str:
    if cls == "Module":
        return c.refuse(node, "glue-structure", "nn.Module()", "derive ModelNew from nn.Module; do not instantiate it")
    if c.context != "init":
        return c.refuse(node, "glue-layer", f"nn.{cls}(...) in {c.context}",
                        "create layers and parameters in __init__ (as the reference's Model does)")
    if cls == "Parameter":
        return TENSOR
    if any(k not in (VALUE, LAYER) for k in every):
        return c.refuse(node, "glue-layer", f"nn.{cls}({c.src(node)[:30]}...)", "layer arguments are plain values")
    return LAYER


def builtin(c: GlueChecker, node: ast.Call, name: str, args: list[str], kwargs: dict) -> str:
    if name in EXCEPTIONS:
        return c.refuse(node, "glue-structure", f"{name}(...) outside raise", "exceptions are only raised")
    if name == "isinstance":
        return VALUE
    if name == "len" and len(args) == 1 and args[0] in (VALUE, TENSOR, TENSORS, LAYER):
        return VALUE
    if name in ("tuple", "list") and args and args[0] == TENSORS:
        return TENSORS
    if name in ("zip", "enumerate") and all(a in (VALUE, TENSORS) for a in args):
        return TENSORS if TENSORS in args else VALUE
    if all(a == VALUE for a in args) and all(k == VALUE for k in kwargs.values()):
        return VALUE
    return c.refuse(node, "glue-compute", f"{name}() over `{c.src(node)[:40]}`",
                    f"builtins apply to plain values here ({name} over a tensor runs PyTorch element by element)")


__all__ = ["attribute", "call", "BUILTINS_ON_VALUES", "TORCH_ALLOC", "TORCH_FACTORIES"]
