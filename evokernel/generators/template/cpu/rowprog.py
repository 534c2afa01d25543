"""Row programs: elementwise chains and last-dimension reductions over a frame ``(rows, N)``.

Every tensor a program touches is broadcast against the frame ``(D0, ..., D{L-1}, N)``: a value is

* ``J`` -- it varies along the last dimension (loaded/computed per element ``j``),
* ``R`` -- constant along a row (a reduction result, a ``(..., 1)`` tensor, a per-row index),
* ``G`` -- a reduction over the whole tensor (only as the program's output),
* constants are literals.

A row is evaluated phase by phase: each last-dim reduction is one loop over ``j`` that recomputes the
``J`` expression it reduces (the elementwise ops are fused into it), ``R`` values are computed once per
row, and the output loop writes the final ``J`` expression. Knobs: vector width ``vec`` (1, 8, 16
lanes), ``unroll`` (independent accumulators / vectors in flight), ``tail`` (``safe`` scalar remainder
loop or ``none``: no remainder handling, only correct when the step divides N), and ``row_cache``
(``cache``: the last reduction stores its operand in the output and the output loop reuses it,
the two-pass softmax; ``recompute``: the output loop recomputes it).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.front.graph import AnalysisError, Const, Graph

UNARY_CALL = {
    "relu": "ek_relu({x})", "sigmoid": "ek_sigmoid({x})", "tanh": "ek_tanh({x})", "exp": "ek_exp({x})",
    "log": "ek_log({x})", "sqrt": "ek_sqrt({x})", "rsqrt": "ek_rsqrt({x})", "abs": "ek_abs({x})",
    "neg": "ek_neg({x})", "silu": "ek_silu({x})", "square": "ek_square({x})", "recip": "ek_recip({x})",
    "relu6": "ek_relu6({x})", "gelu": "ek_gelu({x})", "gelu_tanh": "ek_gelu_tanh({x})", "erf": "ek_erf({x})",
    "log1p": "ek_log1p({x})", "expm1": "ek_expm1({x})", "sin": "ek_sin({x})", "cos": "ek_cos({x})",
    "softsign": "ek_softsign({x})", "hardsigmoid": "ek_hardsigmoid({x})", "hardswish": "ek_hardswish({x})",
    "mish": "ek_mish({x})", "selu": "ek_selu({x})", "logsigmoid": "ek_logsigmoid({x})",
}


def flit(v: float) -> str:
    """A C float literal."""
    v = float(v)
    if v != v:
        return "NAN"
    if v == float("inf"):
        return "INFINITY"
    if v == float("-inf"):
        return "(-INFINITY)"
    return f"{v!r}f" if ("e" in repr(v) or "." in repr(v)) else f"{v!r}.0f"


def unary_expr(fn: str, attrs: dict[str, Any], x: str) -> str:
    if fn in UNARY_CALL:
        return UNARY_CALL[fn].format(x=x)
    if fn == "leaky_relu":
        return f"ek_leaky_relu({x}, {flit(attrs['slope'])})"
    if fn == "elu":
        return f"ek_elu({x}, {flit(attrs['alpha'])})"
    if fn == "softplus":
        return f"ek_softplus({x}, {flit(attrs['beta'])}, {flit(attrs['threshold'])})"
    if fn == "clamp":
        lo, hi = attrs.get("lo"), attrs.get("hi")
        if lo is not None and hi is not None:
            return f"ek_clamp({x}, {flit(lo)}, {flit(hi)})"
        if lo is not None:
            return f"ek_clamp_lo({x}, {flit(lo)})"
        if hi is not None:
            return f"ek_clamp_hi({x}, {flit(hi)})"
        return x
    if fn == "powc":
        return f"ek_powc({x}, {flit(attrs['p'])})"
    raise AnalysisError(f"no kernel code for elementwise op {fn!r}")


def binary_expr(fn: str, a: str, b: str, attrs: dict[str, Any] | None = None) -> str:
    if fn in ("fill_eq", "fill_ne"):  # masked_fill(a, b == c, fill) / (b != c)
        attrs = attrs or {}
        return f"ek_{fn}({a}, {b}, {flit(attrs['c'])}, {flit(attrs['fill'])})"
    if fn in ("add", "sub", "mul", "div"):
        op = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[fn]
        return f"({a} {op} {b})"
    if fn == "max":
        return f"ek_max({a}, {b})"
    if fn == "min":
        return f"ek_min({a}, {b})"
    raise AnalysisError(f"no kernel code for binary op {fn!r}")


def vtype(w: int) -> str:
    return {1: "float", 8: "v8f", 16: "v16f"}[w]


def load(w: int, ptr: str, idx: str) -> str:
    if w == 1:
        return f"{ptr}[{idx}]"
    return f"(*(const v{w}u*)({ptr} + {idx}))"


def store(w: int, ptr: str, idx: str, val: str) -> str:
    if w == 1:
        return f"{ptr}[{idx}] = {val};"
    return f"*(v{w}u*)({ptr} + {idx}) = {val};"


class RowProgram:
    """Emits the per-row code of a program over ``frame``.

    ``nodes``: region nodes in topological order (the last one is the output); ``externals``:
    materialised node ids read, with their C pointer names in ``ptrs``; ``dims``: C names of the
    frame's leading dims; ``N``: C name of the last dim.
    """

    def __init__(self, g: Graph, frame: tuple[int, ...], nodes: list[int], externals: list[int],
                 ptrs: dict[int, str], out_ptr: str, knobs: dict[str, Any], dims: list[str], N: str = "N",
                 j0: str = "0", j1: str = "N", allow_reduce: bool = True, risky_tail: bool = True):
        self.g, self.frame, self.nodes, self.externals = g, tuple(frame), list(nodes), list(externals)
        self.ptrs, self.out_ptr, self.dims, self.N, self.j0, self.j1 = ptrs, out_ptr, dims, N, j0, j1
        self.W = int(knobs.get("vec", 1))
        self.U = int(knobs.get("unroll", 1))
        self.tail_safe = knobs.get("tail", "safe") != "none" or not risky_tail
        self.cache = knobs.get("row_cache", "recompute") == "cache"
        self.L = len(frame) - 1
        self.kind: dict[int, str] = {}
        self.masks: dict[int, tuple[list[bool], bool]] = {}
        self.skips: list[str] = []  # per-row flags of gathers whose index is the ignore_index: the row is left out
        inside = set(nodes)
        for e in externals:
            shape = g.nodes[e].shape
            if g.nodes[e].dtype == "i64":
                shape = tuple(shape) + (1,)  # per-row indices (gather targets)
            self.kind[e] = self._kind_of_shape(shape, e)
        for i in nodes:
            n = g.nodes[i]
            if n.op == "reduce":
                src = n.args[0]
                if n.attrs["dims"] is None:
                    if i != nodes[-1] or not allow_reduce:
                        raise AnalysisError(f"{n.origin}: a full reduction must end its kernel")
                    self.kind[i] = "G"
                elif n.attrs["dims"] == [len(g.nodes[src].shape) - 1] and len(g.nodes[src].shape) == len(frame) and allow_reduce:
                    if self.kind.get(src) != "J":
                        raise AnalysisError(f"{n.origin}: reduction of a row-constant value")
                    self.kind[i] = "R"
                else:
                    raise AnalysisError(f"{n.origin}: reduction over dims {n.attrs['dims']} inside a row program")
            elif n.op == "gather_last":
                x, t = n.args
                if x in inside or t in inside or self.kind.get(x) != "J" or self.kind.get(t) != "R":
                    raise AnalysisError(f"{n.origin}: gather needs materialised (rows, N) values and (rows,) indices")
                self.kind[i] = "R"
            else:
                ks = [self.kind[a] for a in n.args if isinstance(a, int)]
                if "G" in ks:
                    raise AnalysisError(f"{n.origin}: elementwise op after a full reduction")
                self.kind[i] = "J" if "J" in ks else "R"
                if len(n.shape) > len(frame) or (ks and self.kind[i] == "J" and n.shape[-1] != frame[-1]):
                    raise AnalysisError(f"{n.origin}: shape {n.shape} does not fit the frame {frame}")

    # ---------------------------------------------------------------------------- shapes & bases
    def _kind_of_shape(self, shape: tuple[int, ...], nid: int) -> str:
        F = self.frame
        if len(shape) > len(F):
            raise AnalysisError(f"tensor of shape {shape} does not fit the frame {F}")
        s = (1,) * (len(F) - len(shape)) + tuple(shape)
        for a, b in zip(s, F):
            if a != b and a != 1:
                raise AnalysisError(f"tensor of shape {shape} does not broadcast to the frame {F}")
        lead = [s[d] == F[d] and F[d] != 1 for d in range(self.L)]
        j = s[-1] == F[-1] and F[-1] != 1
        self.masks[nid] = (lead, j)
        return "J" if j else "R"

    def _base(self, e: int) -> str:
        lead, j = self.masks[e]
        if not any(lead):
            return "0"
        if all(lead):
            return f"r * {self.N}" if j else "r"
        terms = []
        for d in range(self.L):
            if not lead[d]:
                continue
            stride = [self.dims[k] for k in range(d + 1, self.L) if lead[k]] + ([self.N] if j else [])
            terms.append("c%d" % d + "".join(f" * {s}" for s in stride))
        return " + ".join(terms)

    def needs_coords(self) -> bool:
        return any(any(m[0]) and not all(m[0]) for m in self.masks.values())

    # ----------------------------------------------------------------------------- expressions
    def operand(self, a: Any, w: int, suffix: str, idx: str, cached: set[int]) -> str:
        V = vtype(w)
        if isinstance(a, Const):
            return f"sp<{V}>({flit(a.value)})" if w > 1 else flit(a.value)
        k = self.kind[a]
        if a in cached:
            return load(w, self.out_ptr, f"ob + {idx}")
        if a in self.nodes:
            if k == "J":
                return f"v{a}{suffix}"
            return f"sp<{V}>(r{a})" if w > 1 else f"r{a}"
        if k == "J":
            return load(w, self.ptrs[a], f"b{a} + {idx}")
        return f"sp<{V}>(e{a})" if w > 1 else f"e{a}"

    def node_expr(self, i: int, w: int, suffix: str, idx: str, cached: set[int]) -> str:
        n = self.g.nodes[i]
        ops = [self.operand(a, w, suffix, idx, cached) for a in n.args]
        if n.op == "unary":
            return unary_expr(n.attrs["fn"], n.attrs, ops[0])
        if n.op == "binary":
            return binary_expr(n.attrs["fn"], ops[0], ops[1], n.attrs)
        raise AnalysisError(f"{n.origin}: {n.op} inside an elementwise expression")

    def jdeps(self, target: Any, cached: set[int]) -> list[int]:
        """Region J nodes needed to compute ``target`` (topological order)."""
        need: set[int] = set()
        stack = [target] if isinstance(target, int) else []
        while stack:
            x = stack.pop()
            if x in need or x not in self.nodes or self.kind.get(x) != "J" or x in cached:
                continue
            need.add(x)
            stack.extend(a for a in self.g.nodes[x].args if isinstance(a, int))
        return [i for i in self.nodes if i in need]

    def value(self, target: Any, w: int, suffix: str, idx: str, cached: set[int]) -> str:
        return self.operand(target, w, suffix, idx, cached)

    # ----------------------------------------------------------------------------------- loops
    def jloop(self, reds: list[tuple[str, str, Any]], stores: list[tuple[str, Any]], cached: set[int]) -> list[str]:
        """One pass over j: ``reds`` = (result var, fn, value node) accumulations; ``stores`` =
        (pointer, value node) writes at ``ob + j``."""
        W, U = self.W, self.U
        V = vtype(W)
        step = W * U
        lines = ["{"]
        init = {"sum": "0.0f", "mean": "0.0f", "amax": "(-INFINITY)", "amin": "INFINITY"}
        for var, fn, _ in reds:
            for u in range(U):
                lines.append(f"  {V} {var}_a{u} = sp<{V}>({init[fn]});" if W > 1 else f"  float {var}_a{u} = {init[fn]};")
        lines.append(f"  int64_t j = {self.j0};")
        cond = f"j + {step} <= {self.j1}" if self.tail_safe else f"j < {self.j1}"
        lines.append(f"  for (; {cond}; j += {step}) {{")
        targets = [t for _, _, t in reds] + [t for _, t in stores]
        deps: list[int] = []
        for t in targets:
            for d in self.jdeps(t, cached):
                if d not in deps:
                    deps.append(d)
        deps = [i for i in self.nodes if i in deps]
        for u in range(U):
            idx = f"j + {u * W}" if u else "j"
            suf = f"_{u}"
            for d in deps:
                lines.append(f"    const {V} v{d}{suf} = {self.node_expr(d, W, suf, idx, cached)};")
            for var, fn, t in reds:
                val = self.value(t, W, suf, idx, cached)
                acc = f"{var}_a{u}"
                lines.append(f"    {acc} = {self._acc(fn, acc, val)};")
            for ptr, t in stores:
                lines.append("    " + store(W, ptr, f"ob + {idx}", self.value(t, W, suf, idx, cached)))
        lines.append("  }")
        for var, fn, _ in reds:
            parts = [f"{var}_a{u}" for u in range(U)]
            comb = parts[0]
            for p in parts[1:]:
                comb = self._acc(fn, comb, p)
            h = {"sum": "ek_hsum", "mean": "ek_hsum", "amax": "ek_hmax", "amin": "ek_hmin"}[fn]
            lines.append(f"  {var} = {h}({comb});")
        if self.tail_safe:
            lines.append(f"  for (; j < {self.j1}; ++j) {{")
            for d in deps:
                lines.append(f"    const float v{d}_t = {self.node_expr(d, 1, '_t', 'j', cached)};")
            for var, fn, t in reds:
                lines.append(f"    {var} = {self._acc(fn, var, self.value(t, 1, '_t', 'j', cached))};")
            for ptr, t in stores:
                lines.append("    " + store(1, ptr, "ob + j", self.value(t, 1, "_t", "j", cached)))
            lines.append("  }")
        lines.append("}")
        return lines

    @staticmethod
    def _acc(fn: str, acc: str, val: str) -> str:
        if fn in ("sum", "mean"):
            return f"{acc} + {val}"
        return f"ek_max({acc}, {val})" if fn == "amax" else f"ek_min({acc}, {val})"

    def row_body(self) -> tuple[list[str], str]:
        """The code for one row ``r`` and the output's kind (J, R or G: then ``gval`` holds the row's
        contribution)."""
        g = self.g
        lines: list[str] = []
        if self.needs_coords():
            lines.append("int64_t c0 = 0; (void)c0;")
            decl = ", ".join(f"c{d} = 0" for d in range(1, self.L))
            if decl:
                lines.append(f"int64_t {decl};")
            lines.append("{ int64_t rr = r;")
            for d in range(self.L - 1, 0, -1):
                lines.append(f"  c{d} = rr % {self.dims[d]}; rr /= {self.dims[d]};")
            lines.append("  c0 = rr; }")
        for e in self.externals:
            lines.append(f"const int64_t b{e} = {self._base(e)};")
            if self.kind[e] == "R":
                ctype = "int64_t" if g.nodes[e].dtype == "i64" else "float"
                lines.append(f"const {ctype} e{e} = {self.ptrs[e]}[b{e}];")
        lines.append(f"const int64_t ob = r * {self.N}; (void)ob;")
        out = self.nodes[-1]
        out_kind = self.kind[out]
        cached: set[int] = set()
        # the last reduction whose operand the output loop needs again: store it (row_cache)
        last_red = max((i for i in self.nodes if g.nodes[i].op == "reduce" and self.kind[i] == "R"), default=None)
        cache_node = None
        if self.cache and out_kind == "J" and last_red is not None:
            a = g.nodes[last_red].args[0]
            if a in self.nodes and self.kind[a] == "J" and a != out and a in self.jdeps(out, set()):
                cache_node = a
        for i in self.nodes:
            n = g.nodes[i]
            k = self.kind[i]
            if k == "R":
                if n.op == "reduce":
                    fn = n.attrs["fn"]
                    lines.append(f"float r{i} = 0.0f;")
                    stores = [(self.out_ptr, cache_node)] if cache_node is not None and i == last_red else []
                    lines += self.jloop([(f"r{i}", fn, n.args[0])], stores, cached)
                    if stores:
                        cached.add(cache_node)
                    if fn == "mean":
                        lines.append(f"r{i} *= 1.0f / (float){self.N};")
                elif n.op == "gather_last":
                    x, t = n.args
                    ignore = n.attrs.get("ignore_index")
                    if ignore is None:
                        lines.append(f"const float r{i} = {self.ptrs[x]}[b{x} + e{t}];")
                    else:  # the row is left out of the global reduction (row.py); its index is never read
                        lines.append(f"const bool skip{i} = e{t} == (int64_t){int(ignore)};")
                        lines.append(f"const float r{i} = skip{i} ? 0.0f : {self.ptrs[x]}[b{x} + e{t}];")
                        self.skips.append(f"skip{i}")
                else:
                    lines.append(f"const float r{i} = {self.node_expr(i, 1, '', '0', cached)};")
            elif k == "G":
                a = n.args[0]
                fn = n.attrs["fn"]
                if self.kind.get(a, "R") == "J":
                    lines.append("float gval = 0.0f;")
                    lines += self.jloop([("gval", fn, a)], [], cached)
                else:
                    lines.append(f"const float gval = {self.operand(a, 1, '', '0', cached)};")
        if out_kind == "J":
            lines += self.jloop([], [(self.out_ptr, out)], cached)
        elif out_kind == "R":
            lines.append(f"{self.out_ptr}[r] = r{out};")
        return lines, out_kind
