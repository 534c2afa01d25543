"""Names and literals every Ascend C family writes: C++ float literals, the operator's snake/Pascal names, C
identifiers for kernel arguments, whether the task's ``Model`` has its own ``__init__``, and the kernel operands of
a gemm or convolution (inputs and parameters under unique argument names).
"""
from __future__ import annotations

import ast
import math
import re
from typing import Any

from evokernel.generators.template.front.graph import AnalysisError, Graph
from evokernel.generators.template.front.graph import attr_expr


def flit(v: float) -> str:
    """A C++ float literal."""
    v = float(v)
    if v != v:
        return "NAN"
    if v == math.inf:
        return "INFINITY"
    if v == -math.inf:
        return "(-INFINITY)"
    r = repr(v)
    lit = f"{r}f" if ("e" in r or "." in r) else f"{r}.0f"
    return f"({lit})" if v < 0 else lit


def _prod(xs: Any) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _snake(name: str) -> str:
    s = re.sub(r"^[0-9_]+", "", name.lower())
    s = re.sub(r"[^a-z0-9]+", "_", s).strip("_")
    if not s or not s[0].isalpha():
        s = "evk_" + s if s else "evk_op"
    return s


def _pascal(snake: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_") if p)


def _ident(name: str) -> str:
    s = re.sub(r"[^a-zA-Z0-9]+", "_", name).strip("_").lower()
    return s if s and s[0].isalpha() else f"t_{s}"


def own_init(task_source: str) -> bool:
    """Does the task's ``Model`` define ``__init__`` itself (else the analysis sees nn.Module's)?"""
    for node in ast.parse(task_source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return any(isinstance(b, ast.FunctionDef) and b.name == "__init__" for b in node.body)
    return False


def kernel_operands(g: Graph, ids, root_of, refusal: str) -> list[tuple[str, str, int]]:
    """(kernel argument name, how ModelNew passes it, graph root) of each operand node in `ids` (None skipped):
    inputs and parameters only, float in the graph, names made unique C identifiers that avoid the kernel's own
    arguments (out, workspace, tiling); anything else is refused with `refusal`."""
    out: list[tuple[str, str, int]] = []
    used: set[str] = set()
    for nid in ids:
        if nid is None:
            continue
        root = root_of(nid)
        rnode = g.nodes[root]
        if rnode.op not in ("input", "param") or g.nodes[nid].dtype != "f32":
            raise AnalysisError(f"{g.nodes[nid].origin}: {refusal}")
        if rnode.op == "input":
            name, pyexpr = rnode.attrs["name"], rnode.attrs["name"]
        else:
            name, pyexpr = rnode.attrs["path"].replace(".", "_"), attr_expr("self", rnode.attrs["path"])
        name = _ident(name)
        while name in used or name in ("out", "workspace", "tiling"):
            name += "_"
        used.add(name)
        out.append((name, pyexpr, root))
    return out
