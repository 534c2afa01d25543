"""The static half of the anti-hack gate (paper §3.5, g_hack): rules over the candidate's AST and
over the native source it asks to build. Runs in the trusted parent before anything executes.

Static rules are a filter, not the security boundary (the sandbox and the parent-side checks are):
they catch the common shortcuts early, with feedback an LLM can act on. The dynamic half (the torch
operators that actually run during ``forward``) lives in the sandboxed worker's recorder and is
judged in `verifier.trusted.verifier`.
"""
from __future__ import annotations

import ast
from evokernel.verifier.trusted.findings import Finding

# modules a CPU candidate may import, and nothing else
ALLOWED_IMPORTS = {
    "torch",
    "torch.nn",
    "torch.utils",
    "torch.utils.cpp_extension",
    "math",
    "typing",
    "__future__",
    "evokernel.cpu",
}
ALLOWED_FROM_IMPORTS = {
    "torch": None,  # any name from torch is checked like a torch.<name> attribute
    "torch.nn": None,
    "torch.utils.cpp_extension": {"load_inline"},
    "math": None,
    "typing": None,
    "__future__": None,
    "evokernel.cpu": {"load_cpp"},
}

# torch.<name> a candidate may touch: allocation, dtypes, containers, no-compute helpers
TORCH_ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "tensor", "Size", "Tensor", "nn", "utils", "no_grad", "inference_mode", "device", "dtype",
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "uint8", "int16", "short",
    "int32", "int", "int64", "long", "bool", "contiguous_format", "channels_last", "strided",
    "get_num_threads", "is_tensor", "numel",
}
# torch.nn.<name>: modules used as weight containers (calling them is compute: caught dynamically)
NN_FORBIDDEN = {"functional", "init", "utils", "parallel", "quantized", "intrinsic", "modules", "grad"}

FORBIDDEN_NAMES = {
    "eval": "eval() runs code the verifier cannot inspect",
    "exec": "exec() runs code the verifier cannot inspect",
    "compile": "compile() builds code the verifier cannot inspect",
    "__import__": "__import__() bypasses the import rules",
    "getattr": "getattr() hides which attribute is used; write the attribute directly",
    "setattr": "setattr() is monkeypatching",
    "delattr": "delattr() is monkeypatching",
    "globals": "globals() access is not allowed",
    "locals": "locals() access is not allowed",
    "vars": "vars() access is not allowed",
    "open": "file access is not allowed in a candidate",
    "input": "input() is not allowed",
    "breakpoint": "breakpoint() is not allowed",
    "Model": "the candidate must not use the reference Model (no subclassing, no calls, no references)",
    "type": "type() tricks are not allowed (use isinstance)",
    "id": "id()-keyed state across calls is result caching",
    "memoryview": "raw memory views are not allowed in Python; do memory work in native code",
    "object": "object-level attribute tricks are not allowed",
}
ALLOWED_DUNDERS = {"__init__", "__name__", "__future__"}
FORBIDDEN_ATTRS = {
    "numpy": "Tensor.numpy() moves compute to numpy; do it in native code",
    "tolist": "Python-level compute over tensor elements is not allowed; do it in native code",
    "item": "Python-level compute over tensor elements is not allowed; do it in native code",
    "data_ptr": "pass tensors to native functions directly; load_cpp turns them into pointers",
    "register_forward_hook": "module hooks are not allowed",
    "register_forward_pre_hook": "module hooks are not allowed",
    "register_hook": "hooks are not allowed",
    "as_subclass": "tensor subclasses are not allowed as outputs",
    "_make_subclass": "tensor subclasses are not allowed as outputs",
    "apply_": "Python callbacks over elements are not allowed",
    "map_": "Python callbacks over elements are not allowed",
    "backends": "changing torch backend flags is not allowed",
    "set_num_threads": "changing the thread count is not allowed (the verifier times both sides at one setting)",
}


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# what an Ascend C candidate's model_src may import on top of the above: the binding module the build
# provides and torch_npu (a no-op here, the device runtime on an NPU)
ASCEND_MODEL_IMPORTS = {"custom_ops_lib", "torch_npu"}


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.torch_aliases = {"torch"}
        self.nn_aliases: set[str] = set()
        self.classes: dict[str, ast.ClassDef] = {}
        self.extra_imports: set[str] = set()

    def add(self, rule: str, node: ast.AST, message: str) -> None:
        self.findings.append(Finding(rule, getattr(node, "lineno", 0), message))

    # --- imports ------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS and alias.name not in self.extra_imports:
                self.add("import", node, f"import of {alias.name!r} is not allowed (allowed: torch, torch.nn, "
                         "math, typing, " + (", ".join(sorted(self.extra_imports)) if self.extra_imports else
                                             "evokernel.cpu, torch.utils.cpp_extension") + ")")
            elif alias.name == "torch":
                self.torch_aliases.add(alias.asname or "torch")
            elif alias.name == "torch.nn":
                if alias.asname:
                    self.nn_aliases.add(alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = ("." * node.level) + (node.module or "")
        allowed = ALLOWED_FROM_IMPORTS.get(module, set())
        if module in self.extra_imports:
            return
        if module not in ALLOWED_FROM_IMPORTS:
            self.add("import", node, f"import from {module!r} is not allowed")
            return
        for alias in node.names:
            if alias.name == "*":
                self.add("import", node, "star imports are not allowed")
            elif allowed is not None and alias.name not in allowed:
                self.add("import", node, f"'from {module} import {alias.name}' is not allowed")
            elif module == "torch":
                self._check_torch_attr(alias.name, node)
                if alias.name == "nn":
                    self.nn_aliases.add(alias.asname or "nn")
            elif module == "torch.nn":
                if alias.name in NN_FORBIDDEN:
                    self.add("torch-compute", node, f"torch.nn.{alias.name} is PyTorch compute; do it in native code")

    # --- names and attributes -----------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self.add("forbidden-name", node, f"{node.id}: {FORBIDDEN_NAMES[node.id]}")
        elif node.id.startswith("__") and node.id not in ALLOWED_DUNDERS:
            self.add("dunder", node, f"{node.id} is not allowed")

    def _check_torch_attr(self, name: str, node: ast.AST) -> None:
        if name.startswith("_"):
            self.add("torch-internals", node, f"torch.{name}: torch internals are not allowed")
        elif name not in TORCH_ALLOWED:
            self.add("torch-compute", node, f"torch.{name} is PyTorch compute (or not an allowed helper); "
                     "the computation must happen in your native kernel")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr not in ALLOWED_DUNDERS:
            self.add("dunder", node, f".{node.attr} is not allowed (introspection / monkeypatching)")
        elif node.attr in FORBIDDEN_ATTRS:
            self.add("forbidden-attr", node, f".{node.attr}: {FORBIDDEN_ATTRS[node.attr]}")
        dotted = _dotted(node)
        if dotted:
            head, _, rest = dotted.partition(".")
            parts = rest.split(".") if rest else []
            if head in self.torch_aliases and parts and len(parts) >= 1 and dotted.count(".") == 1:
                self._check_torch_attr(parts[0], node)
            if head in self.torch_aliases and len(parts) >= 2 and parts[0] == "nn":
                self._check_nn(parts[1], node)
            if head in self.torch_aliases and len(parts) >= 2 and parts[0] == "utils":
                if parts[1] != "cpp_extension" or (len(parts) > 2 and parts[2] != "load_inline"):
                    self.add("torch-internals", node, f"{dotted} is not allowed")
            if head in self.nn_aliases and parts:
                self._check_nn(parts[0], node)
        self.generic_visit(node)

    def _check_nn(self, name: str, node: ast.AST) -> None:
        if name in NN_FORBIDDEN or name.startswith("_"):
            self.add("torch-compute", node, f"torch.nn.{name} is PyTorch compute; do it in native code")

    # --- statements ---------------------------------------------------------------------------
    def visit_Try(self, node: ast.AST) -> None:
        self.add("try-except", node, "try/except is not allowed: a fallback path hides a failing kernel")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_Global(self, node: ast.Global) -> None:
        self.add("global-state", node, "global statements are not allowed (state across calls is result caching)")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.add("global-state", node, "nonlocal statements are not allowed")

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            d = _dotted(item.context_expr.func) if isinstance(item.context_expr, ast.Call) else None
            if not d or d.split(".")[-1] not in {"no_grad", "inference_mode"}:
                self.add("with", node, "only 'with torch.no_grad()' / 'torch.inference_mode()' blocks are allowed")
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AST) -> None:
        self.add("async", node, "async code is not allowed")

    def visit_Await(self, node: ast.AST) -> None:
        self.add("async", node, "async code is not allowed")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def _check_target(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._check_target(elt)
            return
        if isinstance(target, ast.Attribute):
            base = _dotted(target.value)
            root = base.split(".")[0] if base else None
            if root is not None and root != "self":
                self.add("monkeypatch", target, f"assigning to {base}.{target.attr} is monkeypatching; "
                         "only attributes of self may be set")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes[node.name] = node
        for base in node.bases:
            d = _dotted(base) or ""
            tail = d.split(".")[-1]
            if tail in {"Tensor", "Model"} or tail.endswith("Tensor"):
                self.add("subclass", node, f"class {node.name} may not derive from {d}")
        for kw in node.keywords:
            self.add("metaclass", node, "class keywords (metaclass=...) are not allowed")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name.startswith("__") and node.name != "__init__":
            self.add("dunder", node, f"defining {node.name} is not allowed (operator/dispatch overrides)")
        for dec in node.decorator_list:
            self.add("decorator", dec, "decorators are not allowed in a candidate")
        self.generic_visit(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.generic_visit(node)

    def visit_Yield(self, node: ast.AST) -> None:
        self.add("generator", node, "generators are not allowed")

    visit_YieldFrom = visit_Yield


def check_python(source: str, filename: str = "candidate.py",
                 extra_imports: frozenset[str] | set[str] = frozenset()) -> list[Finding]:
    """Static rules over a CPU candidate (or an Ascend candidate's model_src, with ``extra_imports``).
    Raises SyntaxError for code that does not parse."""
    tree = ast.parse(source, filename=filename)
    checker = _Checker()
    checker.extra_imports = set(extra_imports)
    checker.visit(tree)
    if "ModelNew" not in checker.classes:
        checker.findings.append(Finding("structure", 0, "the candidate must define class ModelNew(nn.Module)"))
    else:
        cls = checker.classes["ModelNew"]
        if not any((_dotted(b) or "").split(".")[-1] == "Module" for b in cls.bases):
            checker.findings.append(Finding("structure", cls.lineno, "ModelNew must derive from nn.Module"))
    # de-duplicate (an attribute chain may be reported once per level)
    seen: set[tuple[str, int, str]] = set()
    out = []
    for f in checker.findings:
        key = (f.rule, f.line, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
