"""The Python glue of a candidate under a positive allow-list (the static half of the hack gate).

A candidate's Python is glue: it builds native code, mirrors the reference's parameters and, in
``forward``, allocates outputs and calls the native functions. Everything it may contain is listed
here; everything else is refused with a message that names the construct and what to do instead.

The walk is a small abstract interpretation: every expression gets a *kind* -- the torch namespace,
the nn namespace, a tensor, an nn layer, a native library, a plain value (numbers, strings, shapes,
dtypes) -- and each construct is allowed only for certain kinds in a certain context:

* the **module**: imports from a short list, constants and strings built from them, ``load_cpp`` /
  ``load_inline`` calls, ``class ModelNew(nn.Module)`` (and ``get_inputs``/``get_init_inputs``
  definitions, which model replies often copy and nothing may call);
* ``__init__`` (untimed, sees no inputs): registration of parameters, buffers and nn layers as the
  reference's ``Model`` does (torch's random and constant tensor factories, tensor arithmetic on
  them, ``nn.init``), plain values, the native library;
* ``forward`` (timed): shape and stride reads, ``.contiguous()`` and views, output allocation,
  integer arithmetic and comparisons, reading parameters and layer configuration, calls of the
  native library's functions.

Names are bound by kind, so ``T = torch`` binds a namespace to a variable: refused (a namespace is
never a value). So are storing anything in ``self`` from ``forward`` (state across calls), private
and dunder attributes, calling layers, tensor operators and methods that compute, and every builtin
not listed. The nn-layer vocabulary (which attributes are parameters, which are configuration) is
derived from torch.nn itself (`nn_vocabulary.py`).
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from evokernel.verifier.trusted import nn_vocabulary as vocab
from evokernel.verifier.trusted.findings import Finding

# --- kinds ----------------------------------------------------------------------------------------
VALUE, TENSOR, TENSORS, LAYER, NATIVE, BAD = "value", "tensor", "tensors", "layer", "native", "bad"
NS_TORCH, NS_NN, NS_INIT, NS_MATH, NS_TYPING, NS_CPPEXT = "torch", "nn", "nn.init", "math", "typing", "cpp_extension"
LOAD_CPP, LOAD_INLINE, SELF, NATIVE_FN, UNUSABLE = "load_cpp", "load_inline", "self", "native function", "unusable"
NAMESPACES = {NS_TORCH, NS_NN, NS_INIT, NS_MATH, NS_TYPING, NS_CPPEXT}

CPU_NATIVE = frozenset({"evokernel.cpu"})
ASCEND_NATIVE = frozenset({"custom_ops_lib"})

# imports: module -> kind of the bound name; from-imports: (module, name) -> kind
IMPORTS = {"torch": NS_TORCH, "torch.nn": NS_NN, "math": NS_MATH, "typing": NS_TYPING,
           "torch.utils.cpp_extension": NS_CPPEXT, "torch.nn.init": NS_INIT}
FROM_IMPORTS = {("torch", "nn"): NS_NN, ("torch.nn", "init"): NS_INIT, ("evokernel.cpu", "load_cpp"): LOAD_CPP,
                ("torch.utils.cpp_extension", "load_inline"): LOAD_INLINE, ("torch.utils", "cpp_extension"): NS_CPPEXT}
LOAD_INLINE_KWARGS = {"name", "cpp_sources", "functions", "extra_cflags", "extra_ldflags", "verbose", "cuda_sources",
                      "extra_cuda_cflags", "with_cuda", "with_pytorch_error_handling"}
BUILTINS_ON_VALUES = {"int", "float", "bool", "str", "len", "range", "min", "max", "abs", "tuple", "list", "round",
                      "divmod", "enumerate", "zip", "sorted", "reversed", "any", "all", "sum", "dict", "isinstance"}
EXCEPTIONS = {"ValueError", "RuntimeError", "TypeError", "AssertionError", "NotImplementedError", "IndexError"}
STR_METHODS = {"format", "join", "replace", "strip", "lstrip", "rstrip", "split", "lower", "upper", "splitlines",
               "startswith", "endswith", "encode"}
FUTURE = "__future__"

# torch.<name> in forward: allocation only; in __init__ also the random/constant factories
TORCH_ALLOC = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like"}
TORCH_FACTORIES = TORCH_ALLOC | {"randn", "rand", "randint", "randn_like", "rand_like", "tensor", "as_tensor", "arange",
                                 "linspace", "eye", "Tensor"}
TORCH_VALUES = {"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "uint8", "int16",
                "short", "int32", "int", "int64", "long", "bool", "contiguous_format", "channels_last", "strided",
                "Size", "device", "dtype"}
# torch.Tensor is a class, not a plain value: in forward it may only be named (isinstance, annotations), never
# called or read from (``torch.Tensor.split(x, 1)`` would hand tensors over as plain values)
TORCH_TYPE = "torch type"
# tensor attributes and methods in forward
# not ``requires_grad``: no trial holds an input that requires grad, so a branch on it is never judged (red team
# round 12: a ReLU skipped where x.requires_grad was true passed)
TENSOR_VALUE_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "layout"}
TENSOR_VIEW_ATTRS = {"T", "mT", "data"}
TENSOR_VALUE_METHODS = {"size", "stride", "numel", "dim", "element_size", "nelement", "is_contiguous",
                        "storage_offset", "ndimension", "get_device"}
TENSOR_VIEW_METHODS = {"contiguous", "view", "reshape", "flatten", "unflatten", "unsqueeze", "squeeze", "permute",
                       "transpose", "t", "expand", "expand_as", "view_as", "narrow", "select", "detach", "movedim",
                       "swapaxes", "swapdims", "as_strided", "clone", "new_empty", "new_zeros", "new_ones",
                       "new_full", "zero_", "fill_"}
TENSOR_MULTI_METHODS = {"unbind", "split", "chunk"}
COMPUTE_HINT = ("PyTorch compute in forward; compute it in your native kernel (forward may only allocate, view "
                "and call the native library)")


@dataclass
class Env:
    """Names visible in one scope, with their kinds."""

    names: dict[str, str] = field(default_factory=dict)
    parent: "Env | None" = None

    def get(self, name: str) -> str | None:
        if name in self.names:
            return self.names[name]
        return self.parent.get(name) if self.parent else None


class GlueChecker:
    def __init__(self, filename: str, native_modules: frozenset[str], exported: frozenset[str] | None):
        self.filename = filename
        self.native_modules = native_modules
        self.exported = exported
        self.findings: list[Finding] = []
        self.module = Env()
        self.self_attrs: dict[str, str] = {}  # kinds of self.<name>, from __init__
        self.layer_class: dict[str, str] = {}  # self.<name> -> nn class name
        self.context = "module"
        self.has_modelnew = False
        self.strings: set[str] = set()  # names bound to string expressions (string methods apply to these only)

    # --- reporting ----------------------------------------------------------------------------
    def refuse(self, node: ast.AST, rule: str, what: str, instead: str) -> str:
        self.findings.append(Finding(rule, getattr(node, "lineno", 0), f"{what}: {instead}"))
        return BAD

    @staticmethod
    def src(node: ast.AST) -> str:
        text = ast.unparse(node)
        return text if len(text) <= 60 else text[:57] + "..."

    # --- module level -------------------------------------------------------------------------
    def check_module(self, tree: ast.Module) -> None:
        for i, st in enumerate(tree.body):
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue  # docstring
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                self.check_import(st)
            elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                self.assign(st, self.module)
            elif isinstance(st, ast.ClassDef):
                self.check_class(st)
            elif isinstance(st, ast.FunctionDef) and st.name in ("get_inputs", "get_init_inputs"):
                self.check_signature(st)  # copied from the task; never called (no name may refer to it)
                self.module.names[st.name] = UNUSABLE
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.refuse(st, "glue-structure", f"module-level function {st.name}()",
                            "helper functions are not part of a candidate; put the logic in ModelNew.forward or in "
                            "the native code")
            elif isinstance(st, ast.If) and "__main__" in ast.unparse(st.test):
                self.refuse(st, "glue-structure", "an `if __name__ == \"__main__\"` block",
                            "the candidate is imported, never run as a script; remove it")
            else:
                self.refuse(st, "glue-structure", f"module-level `{self.src(st)}`",
                            "at module level a candidate may only import, define constants, build its native code "
                            "and define class ModelNew")

    def check_import(self, st: ast.Import | ast.ImportFrom) -> None:
        if isinstance(st, ast.Import):
            for a in st.names:
                kind = IMPORTS.get(a.name)
                if a.name in self.native_modules and a.name != "evokernel.cpu":
                    kind = NATIVE
                if a.name == "torch_npu" and "custom_ops_lib" in self.native_modules:
                    kind = UNUSABLE  # the device runtime on an NPU: imported for its side effect, never used
                if kind is None:
                    self.refuse(st, "glue-import", f"import of {a.name!r}", self.allowed_imports())
                    continue
                if a.asname is None and "." in a.name:  # import torch.nn binds torch
                    self.module.names[a.name.split(".")[0]] = IMPORTS.get(a.name.split(".")[0], BAD)
                else:
                    self.module.names[a.asname or a.name] = kind
            return
        module = st.module or ""
        if module == FUTURE:
            return
        for a in st.names:
            kind = FROM_IMPORTS.get((module, a.name))
            if module in self.native_modules and module != "evokernel.cpu":
                kind = NATIVE_FN
                if self.exported is not None and a.name not in self.exported:
                    self.refuse(st, "custom-ops", f"{module} has no {a.name}",
                                f"the binding exports {', '.join(sorted(self.exported))}; call only those")
                    continue
            if module == "typing":
                kind = NS_TYPING
            if kind is None and module in ("torch.nn",) and vocab.is_layer(a.name):
                kind = f"class:{a.name}"
            if kind is None and module in ("torch.nn",) and a.name in ("Module", "Parameter"):
                kind = f"class:{a.name}"
            if kind is None:
                self.refuse(st, "glue-import", f"'from {module} import {a.name}'", self.allowed_imports())
                continue
            self.module.names[a.asname or a.name] = kind

    def allowed_imports(self) -> str:
        extra = ("import custom_ops_lib (and torch_npu)" if "custom_ops_lib" in self.native_modules else
                 "from evokernel.cpu import load_cpp, from torch.utils.cpp_extension import load_inline")
        return f"a candidate may import torch, torch.nn (as nn), math, typing and {extra}; nothing else"

    # --- the class ----------------------------------------------------------------------------
    def check_class(self, cls: ast.ClassDef) -> None:
        if cls.name != "ModelNew":
            self.refuse(cls, "glue-structure", f"class {cls.name}",
                        "a candidate defines one class, ModelNew(nn.Module); put helpers in the native code")
            return
        self.has_modelnew = True
        if cls.decorator_list or cls.keywords:
            self.refuse(cls, "glue-structure", "decorators or class keywords on ModelNew", "remove them")
        if not any(self.base_is_module(b) for b in cls.bases) or len(cls.bases) != 1:
            self.findings.append(Finding("structure", cls.lineno, "ModelNew must derive from nn.Module (only)"
                                         + self.unbound_base(cls.bases)))
        methods = {}
        for st in cls.body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                continue
            if isinstance(st, ast.FunctionDef) and st.name in ("__init__", "forward") and st.name not in methods:
                methods[st.name] = st
                continue
            self.refuse(st, "glue-structure", f"`{self.src(st) if not isinstance(st, ast.FunctionDef) else 'def ' + st.name}` "
                        "in ModelNew", "ModelNew has __init__ and forward only (no other methods, class attributes "
                        "or decorators)")
        if "__init__" in methods:
            self.check_function(methods["__init__"], "init")
        if "forward" in methods:
            self.check_function(methods["forward"], "forward")
        else:
            self.findings.append(Finding("structure", cls.lineno, "ModelNew must define forward"))

    def unbound_base(self, bases: list[ast.expr]) -> str:
        """What to add when the base names a module the candidate never imported (seen in real replies:
        `class ModelNew(nn.Module)` with `import torch` only)."""
        for b in bases:
            root = b
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and self.module.get(root.id) is None and not hasattr(builtins, root.id):
                hint = "import torch.nn as nn" if root.id == "nn" else f"import {root.id}"
                return f": the name '{root.id}' is not defined; add `{hint}` at the top"
        return ""

    def base_is_module(self, base: ast.expr) -> bool:
        if isinstance(base, ast.Name):
            return self.module.get(base.id) == "class:Module"
        return isinstance(base, ast.Attribute) and base.attr == "Module" and self.kind_of_namespace(base.value) == NS_NN

    def kind_of_namespace(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.module.get(node.id)
        if isinstance(node, ast.Attribute) and node.attr == "nn" and self.kind_of_namespace(node.value) == NS_TORCH:
            return NS_NN
        return None

    def check_signature(self, fn: ast.FunctionDef) -> None:
        for dec in fn.decorator_list:
            self.refuse(dec, "glue-structure", "a decorator", "decorators are not allowed in a candidate")
        a = fn.args
        for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
            if not _constant(d) and not (isinstance(d, (ast.Tuple, ast.List)) and all(_constant(e) for e in d.elts)):
                self.refuse(d, "glue-structure", f"default argument `{self.src(d)}`",
                            "default arguments must be constants")
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
            if arg.annotation is not None:
                self.check_annotation(arg.annotation)
        if fn.returns is not None:
            self.check_annotation(fn.returns)

    def check_annotation(self, node: ast.expr) -> None:
        for n in ast.walk(node):
            if not isinstance(n, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Tuple, ast.BinOp,
                                  ast.BitOr, ast.Load, ast.List)):
                self.refuse(node, "glue-structure", f"annotation `{self.src(node)}`",
                            "annotations may only name types")
                return

    def check_function(self, fn: ast.FunctionDef, context: str) -> None:
        self.check_signature(fn)
        self.context = context
        env = Env(parent=self.module)
        params = fn.args.posonlyargs + fn.args.args
        if not params:
            self.refuse(fn, "glue-structure", f"{fn.name} without self", "define it as a method: def "
                        f"{fn.name}(self, ...)")
            return
        env.names[params[0].arg] = SELF
        for p in params[1:] + fn.args.kwonlyargs:
            env.names[p.arg] = TENSOR if context == "forward" else VALUE
        for extra in (fn.args.vararg, fn.args.kwarg):
            if extra is not None:
                env.names[extra.arg] = TENSORS if context == "forward" else VALUE
        self.block(fn.body, env)
        self.context = "module"

    # --- statements -----------------------------------------------------------------------------
    def block(self, body: list[ast.stmt], env: Env) -> None:
        for st in body:
            self.statement(st, env)

    def statement(self, st: ast.stmt, env: Env) -> None:
        if isinstance(st, ast.Expr):
            if isinstance(st.value, ast.Constant):
                return
            if self.context == "init" and self.is_super_init(st.value):
                return
            self.expr(st.value, env, statement=True)
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.assign(st, env)
        elif isinstance(st, ast.Return):
            if self.context == "init" and st.value is not None:
                self.refuse(st, "glue-structure", "return with a value in __init__", "remove it")
            elif st.value is not None:
                kind = self.expr(st.value, env)
                if kind not in (TENSOR, TENSORS, BAD):
                    self.refuse(st, "glue-output", f"forward returns `{self.src(st.value)}` ({kind})",
                                "forward must return the output tensor(s) it allocated and the native code filled")
        elif isinstance(st, ast.If):
            self.condition(st.test, env)
            self.block(st.body, env)
            self.block(st.orelse, env)
        elif isinstance(st, ast.For):
            kind = self.expr(st.iter, env)
            if st.orelse:
                self.refuse(st, "glue-structure", "for ... else", "remove the else branch")
            elem = {VALUE: VALUE, TENSORS: TENSOR, LAYER: LAYER}.get(kind)
            if elem is None:
                if kind != BAD:
                    self.refuse(st.iter, "glue-compute", f"iterating over `{self.src(st.iter)}` ({kind})",
                                "loop over range(...) of sizes; iterating over a tensor runs PyTorch per element")
                elem = BAD
            self.bind(st.target, elem, env)
            self.loop_body(st.body, env)
        elif isinstance(st, ast.While):
            self.condition(st.test, env)
            self.loop_body(st.body, env)
            self.condition(st.test, env)  # the test again, with the kinds the body left
            self.block(st.orelse, env)
        elif isinstance(st, (ast.Pass, ast.Break, ast.Continue)):
            return
        elif isinstance(st, ast.Raise):
            self.check_raise(st, env)
        elif isinstance(st, ast.Assert):
            self.condition(st.test, env)
            if st.msg is not None:
                self.value_expr(st.msg, env, "an assert message")
        elif isinstance(st, ast.With):
            for item in st.items:
                if not self.is_no_grad(item.context_expr, env) or item.optional_vars is not None:
                    self.refuse(st, "glue-structure", f"with {self.src(item.context_expr)}",
                                "only `with torch.no_grad():` is allowed")
            self.block(st.body, env)
        elif isinstance(st, (ast.Try, ast.TryStar)):
            self.refuse(st, "try-except", "try/except", "a fallback path hides a failing kernel; let errors raise")
            for part in (st.body, *[h.body for h in st.handlers], st.orelse, st.finalbody):
                self.block(part, env)
        elif isinstance(st, (ast.Global, ast.Nonlocal)):
            self.refuse(st, "global-state", f"{type(st).__name__.lower()} statement",
                        "state kept across calls is result caching; compute every call from its inputs")
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            self.refuse(st, "glue-structure", f"a nested {type(st).__name__} in {self.context}",
                        "define no functions or classes inside ModelNew; put the logic in native code")
        elif isinstance(st, ast.Delete):
            self.refuse(st, "glue-structure", "del", "remove it")
        else:
            self.refuse(st, "glue-structure", f"`{self.src(st)}`", f"this statement is not allowed in {self.context}")

    def check_raise(self, st: ast.Raise, env: Env) -> None:
        exc = st.exc
        if exc is None:
            return
        call = exc if isinstance(exc, ast.Call) else None
        name = call.func if call else exc
        if not (isinstance(name, ast.Name) and name.id in EXCEPTIONS and env.get(name.id) is None):
            self.refuse(st, "glue-structure", f"raise {self.src(exc)}",
                        f"raise one of {', '.join(sorted(EXCEPTIONS))} with a message")
            return
        for a in (call.args if call else []):
            self.value_expr(a, env, "an exception message")

    def is_super_init(self, node: ast.expr) -> bool:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"
                and not node.args and not node.keywords):
            return False
        target = node.func.value
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
            if not target.args:
                return True
            if (len(target.args) == 2 and isinstance(target.args[0], ast.Name) and target.args[0].id == "ModelNew"
                    and isinstance(target.args[1], ast.Name) and target.args[1].id == "self"):
                return True
            if target.args and isinstance(target.args[0], ast.Name) and target.args[0].id == "Model":
                self.refuse(node, "glue-model", "super(Model, self).__init__()",
                            "Model does not exist in the candidate's process: call super().__init__()")
                return True
        return False

    def is_no_grad(self, node: ast.expr, env: Env) -> bool:
        return (isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("no_grad", "inference_mode") and self.expr(node.func.value, env) == NS_TORCH)

    def condition(self, node: ast.expr, env: Env) -> None:
        self.value_expr(node, env, "a condition")

    def value_expr(self, node: ast.expr, env: Env, what: str) -> None:
        kind = self.expr(node, env)
        if kind not in (VALUE, BAD):
            self.refuse(node, "glue-compute", f"{what} `{self.src(node)}` uses a {kind}",
                        "conditions and messages may use sizes, dtypes and other plain values only")

    # --- assignments --------------------------------------------------------------------------
    def assign(self, st: ast.Assign | ast.AnnAssign | ast.AugAssign, env: Env) -> None:
        if isinstance(st, ast.AnnAssign):
            self.check_annotation(st.annotation)
            if st.value is None:
                return
            targets, value = [st.target], st.value
        elif isinstance(st, ast.AugAssign):
            targets, value = [st.target], st.value
            target_kind = self.target_kind(st.target, env)
            kind = self.expr(value, env)
            if (target_kind, kind) != (VALUE, VALUE) and BAD not in (target_kind, kind):
                self.refuse(st, "glue-compute", f"`{self.src(st)}`",
                            "augmented assignment only on plain values (sizes); " + COMPUTE_HINT)
            for t in targets:
                self.store(t, VALUE if target_kind == VALUE else BAD, env, st)
            return
        else:
            targets, value = st.targets, st.value
        kind = self.expr(value, env)
        for t in targets:
            self.store(t, kind, env, st)
            if isinstance(t, ast.Name):
                (self.strings.add if self.is_string(value) else self.strings.discard)(t.id)

    def is_string(self, node: ast.expr) -> bool:
        """Is ``node`` a string by construction (a literal, an f-string, concatenation or formatting of strings,
        ``str(...)``, a string method of a string, a name bound to one)? String methods are allowed on these only:
        a method named like a string's on anything else is that thing's method."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str)
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod, ast.Mult)):
            return self.is_string(node.left) or (isinstance(node.op, ast.Add) and self.is_string(node.right))
        if isinstance(node, ast.Name):
            return node.id in self.strings
        if isinstance(node, ast.Subscript):
            return self.is_string(node.value)
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                return f.id == "str"
            return isinstance(f, ast.Attribute) and f.attr in STR_METHODS and self.is_string(f.value)
        return False

    def target_kind(self, t: ast.expr, env: Env) -> str:
        if isinstance(t, ast.Name):
            return env.get(t.id) or BAD
        return self.expr(t, env)

    def store(self, target: ast.expr, kind: str, env: Env, st: ast.stmt) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            elem = {VALUE: VALUE, TENSORS: TENSOR, LAYER: LAYER, BAD: BAD}.get(kind, BAD)
            if elem == BAD and kind != BAD:
                self.refuse(target, "glue-structure", f"unpacking a {kind}", "unpack sizes or tuples of tensors only")
            for e in target.elts:
                self.store(e.value if isinstance(e, ast.Starred) else e, elem, env, st)
            return
        if isinstance(target, ast.Attribute):
            base = target.value
            if not (isinstance(base, ast.Name) and env.get(base.id) == SELF):
                self.refuse(st, "monkeypatch", f"assigning to {self.src(target)}",
                            "only attributes of self may be set, in __init__")
                return
            if self.context != "init":
                self.refuse(st, "global-state", f"assigning to {self.src(target)} in {self.context}",
                            "forward must not keep state across calls (call counting and caches are hacks); "
                            "set attributes in __init__ only")
                return
            if target.attr.startswith("_"):
                self.refuse(st, "glue-private", f"self.{target.attr}", "attribute names may not start with _")
                return
            if kind in NAMESPACES or kind in (LOAD_CPP, LOAD_INLINE, UNUSABLE, SELF) or ":" in kind:
                self.refuse(st, "glue-alias", f"storing {kind} in {self.src(target)}",
                            "a namespace, function or class is never a value; use it where it is needed")
                return
            self.self_attrs[target.attr] = kind
            if kind == LAYER and isinstance(st, (ast.Assign, ast.AnnAssign)):
                cls = self.layer_name(st.value)
                if cls:
                    self.layer_class[target.attr] = cls
            return
        if isinstance(target, ast.Subscript):
            self.refuse(st, "glue-compute", f"item assignment `{self.src(target)}`",
                        "writing into tensors or containers from Python is not allowed; the native code writes "
                        "the outputs")
            return
        if kind in NAMESPACES or kind in (LOAD_CPP, LOAD_INLINE, UNUSABLE, SELF) or ":" in kind:
            self.refuse(st, "glue-alias", f"binding {kind} to `{self.src(target)}`",
                        "a namespace, function or class is never assigned to a name (aliases hide what is used)")
            return
        if self.context == "module" and kind not in (VALUE, NATIVE, NATIVE_FN, BAD):
            self.refuse(st, "glue-structure", f"module-level {kind} `{self.src(target)}`",
                        "module-level names hold constants or the built native library only")
            return
        self.bind(target, kind, env)

    def loop_body(self, body: list[ast.stmt], env: Env) -> None:
        """A loop's body, walked twice: the kinds its end leaves reach its start (``a = 0`` ... ``a = x`` in one
        iteration makes ``a`` a tensor in the next); findings of the second walk are not repeated."""
        seen = len(self.findings)
        self.block(body, env)
        first = {(f.rule, f.line, f.message) for f in self.findings[seen:]}
        mark = len(self.findings)
        self.block(body, env)
        self.findings[mark:] = [f for f in self.findings[mark:] if (f.rule, f.line, f.message) not in first]

    @staticmethod
    def join(old: str | None, new: str) -> str | None:
        """The kind of a name bound twice in one scope, over every path (not the last binding in program order:
        ``a = x`` then ``if never: a = 0`` leaves ``a`` a tensor on the path that runs). A plain value never
        hides another kind; two other kinds do not mix (None: refused)."""
        if old is None or old == new or new == BAD or old == BAD:
            return BAD if BAD in (old, new) else new
        if new == VALUE:
            return old
        if old == VALUE:
            return new
        return None

    def bind(self, target: ast.expr, kind: str, env: Env) -> None:
        if isinstance(target, ast.Name):
            if env.get(target.id) in NAMESPACES | {SELF, LOAD_CPP, LOAD_INLINE}:
                self.refuse(target, "glue-alias", f"rebinding {target.id}", "do not shadow imported names or self")
            joined = self.join(env.names.get(target.id), kind)
            if joined is None:
                self.refuse(target, "glue-structure", f"`{target.id}` holds a {env.names[target.id]} and a {kind}",
                            "give each kind of value its own name")
                joined = BAD
            env.names[target.id] = joined
        elif isinstance(target, (ast.Tuple, ast.List)):
            elem = {VALUE: VALUE, TENSORS: TENSOR, BAD: BAD}.get(kind, BAD)
            if elem == BAD and kind != BAD:
                self.refuse(target, "glue-structure", f"unpacking a {kind}", "unpack sizes or tuples of tensors only")
            for e in target.elts:
                self.bind(e.value if isinstance(e, ast.Starred) else e, elem, env)
        else:
            self.refuse(target, "glue-structure", f"assignment target `{self.src(target)}`", "assign to names only")

    def layer_name(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and vocab.is_layer(f.attr):
                return f.attr
            if isinstance(f, ast.Name) and (k := self.module.get(f.id)) and k.startswith("class:"):
                return k[6:]
        return None

    # --- expressions ----------------------------------------------------------------------------
    def expr(self, node: ast.expr, env: Env, statement: bool = False) -> str:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            return self.refuse(node, "glue-structure", f"`{self.src(node)}`",
                               f"this expression is not allowed in {self.context}")
        kind = method(node, env)
        if statement and kind not in (BAD,) and not isinstance(node, ast.Call):
            return kind
        return kind

    def e_Constant(self, node: ast.Constant, env: Env) -> str:
        return VALUE

    def e_JoinedStr(self, node: ast.JoinedStr, env: Env) -> str:
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                self.value_expr(v.value, env, "an f-string field")
                if v.format_spec is not None:  # f"{x:{spec}}": the spec's own fields are values too
                    self.value_expr(v.format_spec, env, "an f-string format spec")
        return VALUE

    def e_Name(self, node: ast.Name, env: Env) -> str:
        kind = env.get(node.id)
        if kind is None:
            if node.id in BUILTINS_ON_VALUES or node.id in EXCEPTIONS:
                return f"builtin:{node.id}"
            if node.id == "Model":
                return self.refuse(node, "glue-model", "a reference to Model",
                                   "the reference Model is not available to a candidate; reimplement it")
            if node.id == "print":
                return self.refuse(node, "glue-builtin", "print()", "stdout belongs to the verifier; remove it")
            return self.refuse(node, "glue-builtin", f"the name {node.id!r}",
                               "it is neither defined in the candidate nor an allowed builtin "
                               f"({', '.join(sorted(BUILTINS_ON_VALUES))})")
        if kind == UNUSABLE:
            return self.refuse(node, "glue-structure", f"using {node.id}", f"{node.id} may be defined but not used")
        return kind

    def e_Tuple(self, node: ast.Tuple | ast.List, env: Env) -> str:
        kinds = {self.expr(e.value if isinstance(e, ast.Starred) else e, env) for e in node.elts}
        kinds.discard(BAD)
        if kinds <= {VALUE}:
            return VALUE
        if kinds <= {TENSOR, TENSORS}:
            return TENSORS
        if kinds <= {LAYER} and self.context == "init":
            return LAYER
        return self.refuse(node, "glue-structure", f"a mixed collection `{self.src(node)}`",
                           "collections hold plain values or tensors only")

    e_List = e_Tuple
    e_Set = e_Tuple

    def e_Dict(self, node: ast.Dict, env: Env) -> str:
        for k, v in zip(node.keys, node.values):
            if k is not None:
                self.value_expr(k, env, "a dict key")
            self.value_expr(v, env, "a dict value")
        return VALUE

    def e_BinOp(self, node: ast.BinOp, env: Env) -> str:
        kinds = {self.expr(node.left, env), self.expr(node.right, env)}
        if BAD in kinds:
            return BAD
        if kinds == {VALUE}:
            return VALUE
        if self.context == "init" and kinds <= {VALUE, TENSOR}:
            return TENSOR  # parameter initialisation arithmetic (untimed, sees no inputs)
        return self.refuse(node, "glue-compute", f"`{self.src(node)}`", "tensor arithmetic is " + COMPUTE_HINT)

    def e_UnaryOp(self, node: ast.UnaryOp, env: Env) -> str:
        kind = self.expr(node.operand, env)
        if kind in (VALUE, BAD):
            return kind
        if self.context == "init" and kind == TENSOR:
            return TENSOR
        return self.refuse(node, "glue-compute", f"`{self.src(node)}`", "tensor arithmetic is " + COMPUTE_HINT)

    def e_BoolOp(self, node: ast.BoolOp, env: Env) -> str:
        for v in node.values:
            self.value_expr(v, env, "a boolean operand")
        return VALUE

    def e_Compare(self, node: ast.Compare, env: Env) -> str:
        operands = [node.left, *node.comparators]
        identity = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
        for o in operands:
            kind = self.expr(o, env)
            if kind not in (VALUE, BAD) and not identity:
                self.refuse(node, "glue-compute", f"comparison `{self.src(node)}`",
                            "comparing tensors is " + COMPUTE_HINT + "; compare sizes and dtypes only")
                return BAD
        return VALUE

    def e_IfExp(self, node: ast.IfExp, env: Env) -> str:
        self.condition(node.test, env)
        a, b = self.expr(node.body, env), self.expr(node.orelse, env)
        return a if a == b else (BAD if BAD in (a, b) else self.refuse(
            node, "glue-structure", f"`{self.src(node)}` mixes kinds", "both branches must give the same kind"))

    def e_Slice(self, node: ast.Slice, env: Env) -> str:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.value_expr(part, env, "a slice bound")
        return VALUE

    def e_Starred(self, node: ast.Starred, env: Env) -> str:
        return self.expr(node.value, env)

    def e_Subscript(self, node: ast.Subscript, env: Env) -> str:
        kind = self.expr(node.value, env)
        index = self.expr(node.slice, env)
        if BAD in (kind, index):
            return BAD
        if kind == NS_TYPING:
            return VALUE
        if index != VALUE:
            return self.refuse(node, "glue-compute", f"indexing with `{self.src(node.slice)}`",
                               "index with integers and slices only; tensor (mask or gather) indexing is "
                               + COMPUTE_HINT)
        if kind in (VALUE, TENSOR, LAYER):
            return kind  # a basic-indexing tensor view; a layer of a ModuleList
        if kind == TENSORS:  # a slice of a tuple of tensors is a tuple (possibly empty), an integer index a tensor
            return TENSORS if isinstance(node.slice, ast.Slice) else TENSOR
        return self.refuse(node, "glue-structure", f"indexing `{self.src(node)}`", "index sizes, tensors and tuples")

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp, env: Env,
                      elements: list[ast.expr]) -> str:
        inner = Env(parent=env)
        for gen in node.generators:
            kind = self.expr(gen.iter, inner)
            elem = {VALUE: VALUE, TENSORS: TENSOR, LAYER: LAYER}.get(kind, BAD)
            if elem == BAD and kind != BAD:
                self.refuse(gen.iter, "glue-compute", f"iterating over `{self.src(gen.iter)}` ({kind})",
                            "iterate over sizes or tuples of tensors only")
            self.bind(gen.target, elem, inner)
            for cond in gen.ifs:
                self.condition(cond, inner)
        kinds = {self.expr(e, inner) for e in elements} - {BAD}
        if kinds <= {VALUE}:
            return VALUE
        if kinds <= {TENSOR}:
            return TENSORS
        if kinds <= {LAYER} and self.context == "init":
            return LAYER
        return self.refuse(node, "glue-structure", f"comprehension `{self.src(node)}`",
                           "comprehensions may build sizes or tuples of tensors only")

    def e_ListComp(self, node: ast.ListComp, env: Env) -> str:
        return self.comprehension(node, env, [node.elt])

    e_GeneratorExp = e_ListComp
    e_SetComp = e_ListComp

    def e_DictComp(self, node: ast.DictComp, env: Env) -> str:
        return self.comprehension(node, env, [node.key, node.value])

    def e_Attribute(self, node: ast.Attribute, env: Env) -> str:
        from evokernel.verifier.trusted.ast_allowlist_calls import attribute

        return attribute(self, node, env)

    def e_Call(self, node: ast.Call, env: Env) -> str:
        from evokernel.verifier.trusted.ast_allowlist_calls import call

        return call(self, node, env)


def check_glue(source: str, filename: str = "candidate.py", *, native_modules: frozenset[str] = CPU_NATIVE,
               exported: frozenset[str] | set[str] | None = None) -> list[Finding]:
    """Findings of the glue allow-list over a candidate's Python (an Ascend C candidate's model_src with
    ``native_modules=ASCEND_NATIVE`` and the binding's ``exported`` function names). Raises SyntaxError
    for code that does not parse. Rule "structure" findings mean the candidate cannot be built."""
    tree = ast.parse(source, filename=filename)
    checker = GlueChecker(filename, frozenset(native_modules), frozenset(exported) if exported is not None else None)
    checker.check_module(tree)
    if not checker.has_modelnew:
        checker.findings.append(Finding("structure", 0, "the candidate must define class ModelNew(nn.Module)"))
    seen: set[tuple[str, int, str]] = set()
    out = []
    for f in checker.findings:
        key = (f.rule, f.line, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _constant(node: ast.expr) -> bool:
    """A literal: a constant, or a signed number (`-1` is UnaryOp(USub, 1) in the syntax tree, e.g. the
    `dim=-1` default of a softmax's ModelNew)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
        return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool)
    return isinstance(node, ast.Constant)
