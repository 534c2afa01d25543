"""Ascend C operator projects for the template generator (backends ``ascend-sim`` and ``ascend``).

A candidate is the MultiKernelBench operator-project file: six strings (``project_json_src``,
``host_tiling_src``, ``host_operator_src``, ``kernel_src``, ``python_bind_src``, ``model_src``).
The task goes through the same analysis and stage plan as for the cpu backend; :func:`prepare`
accepts plans of exactly one ``row`` stage (elementwise chains, last-dimension reductions, softmax /
log-softmax, layer / RMS normalisation and fusions of these) and classifies every value of the stage
against the frame ``(rows, N)``:

* ``J`` varies along rows and columns (a tile of ``kk`` rows x ``cc`` columns in UB),
* ``R`` one value per row (a reduction, a ``(..., 1)`` input): a vector of ``kk`` slots in UB,
* ``C`` one value per column (a ``(N,)`` weight/bias and what is computed from it): one chunk row,
* ``S`` one value (a ``(1,)`` parameter): a float read once per block on the scalar unit,
* literals: the reference's constants (eps, slopes, scales).

Three kernel families:

* ``ascend_elementwise`` -- only J inputs and scalars, no reduction: a flat 1-D split of the tensor
  over the blocks in 32-byte units, tiles of ``tile`` elements, an unaligned tail moved with
  DataCopyPad (the shape of the canonical add_custom example);
* ``ascend_row`` -- rows split over the blocks; a tile is ``kk`` whole rows (or, for rows longer than
  a tile, one row in chunks). ``row_mode=stream`` evaluates each reduction in its own pass over GM
  (recomputing the elementwise ops it reduces) and a final pass writes the output; ``resident`` reads a
  tile of rows once and runs every phase in UB. ``vec_form=count`` uses count-form instructions per row
  (row scalars read back with a V->S sync); ``repeat`` uses mask/repeat forms over all rows of the tile
  (WholeReduce, a 64-lane fold, Brcb-broadcast binary ops). A whole-tensor sum/mean as the output folds
  each tile's row results into a block total, added atomically into the binding's zero-filled scalar;
* ``ascend_colreduce`` -- a reduction over a run of middle dimensions ``(outer, mid, inner) -> (outer,
  inner)``: units of one outer index x a column chunk (narrower chunks when there are fewer units than
  cores), tiles of several reduced rows, combined row by row (``count``) or by a pairwise tree (``repeat``).

Computation is in float32. Transcendental functions are composed from the emulated instructions
(Exp, Ln, Abs, Sqrt, Div, Muls, Adds, Maxs, Mins, Relu, LeakyRelu, Duplicate) in overflow-safe forms;
Rsqrt/Reciprocal are avoided (approximate on the device) in favour of Div.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from evokernel.generators.template.analysis import AnalysisError, Const, Graph
from evokernel.generators.template.lower import Plan

CORES = 40  # GetCoreNumAiv() of the emulated 910B
UB_BYTES = 196608
MAX_REPEAT_CHUNK = 2040  # repeat strides are uint8 counts of 32-byte blocks: rows up to 255 * 8 floats
MAX_TILE_ROWS = 255  # repeat counts are uint8

# ----------------------------------------------------------------------------------------- helpers


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


# --------------------------------------------------------------------------------------- prepare


@dataclass
class Ext:
    nid: int  # the node the stage reads (an input, a parameter or a view of one)
    root: int  # the input/parameter node holding the data
    name: str  # OpDef / kernel argument name
    role: str  # J, C, R or S
    pyexpr: str  # how ModelNew passes it
    shape: tuple[int, ...]


@dataclass
class AscendOp:
    graph: Graph
    nodes: list[int]
    kinds: dict[int, str]
    exts: list[Ext]
    out: int
    out_kind: str  # J or R
    out_shape: tuple[int, ...]  # the reference's output shape
    frame: tuple[int, ...]
    rows: int
    N: int
    family: str
    op_class: str
    snake: str
    frame_ext: int  # index into exts of a J input with the frame's shape (-1: none)
    reduces: list[int] = field(default_factory=list)
    init_source: str = ""  # the reference Model.__init__ rewritten for ModelNew ("" when Model has none)
    col: tuple[int, int, int, int, int] | None = None  # ascend_colreduce: (outer, mid, inner, d0, d1)

    @property
    def op_type(self) -> str:
        return _pascal(self.snake + "_custom")

    @property
    def kernel_name(self) -> str:
        return self.snake + "_custom"

    def ext_of(self, nid: int) -> Ext | None:
        for e in self.exts:
            if e.nid == nid:
                return e
        return None


REDUCE_FNS = ("sum", "mean", "amax", "amin")


def own_init(task_source: str) -> bool:
    """Does the task's ``Model`` define ``__init__`` itself (else the analysis sees nn.Module's)?"""
    import ast

    for node in ast.parse(task_source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return any(isinstance(b, ast.FunctionDef) and b.name == "__init__" for b in node.body)
    return False


def prepare(plan: Plan, task_name: str, task_source: str = "") -> AscendOp:
    """Check that the plan is one operator this generator can write and classify its values."""
    g = plan.graph
    fams = [s.family for s in plan.stages]
    if plan.stages and plan.stages[0].family == "gemm":  # a matmul and what follows it: ascend_cube.py
        from evokernel.generators.template import ascend_cube

        return ascend_cube.prepare(plan, task_name, task_source)  # type: ignore[return-value]
    if plan.stages and plan.stages[0].family == "conv":  # a convolution: ascend_conv.py
        from evokernel.generators.template import ascend_conv

        return ascend_conv.prepare(plan, task_name, task_source)  # type: ignore[return-value]
    if len(plan.stages) != 1:
        raise AnalysisError(f"the task needs {len(plan.stages)} kernels ({' -> '.join(fams)}); the Ascend C "
                            "templates write one operator (elementwise chains, last-dim reductions, softmax, "
                            "normalisations and their fusions)")
    st = plan.stages[0]
    if st.family == "midreduce":
        return _prepare_col(plan, task_name, task_source)
    if st.family == "gemm":  # the cube unit: ascend_cube.py
        from evokernel.generators.template import ascend_cube

        return ascend_cube.prepare(plan, task_name, task_source)  # type: ignore[return-value]
    if st.family != "row":
        raise AnalysisError(f"no Ascend C template for the {st.family} family (supported: elementwise chains, "
                            "last-dim reductions, softmax/log_softmax, layer/RMS norm and their fusions)")
    root_of = lambda nid: plan.aliases.get(nid, nid)  # noqa: E731
    if root_of(g.output) != st.out:
        raise AnalysisError("the output is not produced by the kernel")
    shapes = [g.nodes[i].shape for i in st.nodes] + [g.nodes[e].shape for e in st.externals]
    frame = max(shapes, key=lambda s: (_prod(s), len(s)))
    if len(frame) == 0:
        frame = (1,)
    frame = tuple(frame)
    N = int(frame[-1])
    rows = _prod(frame[:-1])
    if N < 1 or rows < 1:
        raise AnalysisError(f"empty frame {frame}")
    if rows * N >= 2 ** 31:
        raise AnalysisError(f"the tensor has {rows * N} elements; 32-bit tiling fields cannot address it")
    L = len(frame) - 1

    def classify(shape: tuple[int, ...], what: str) -> str:
        if len(shape) > len(frame):
            raise AnalysisError(f"{what} of shape {shape} does not fit the frame {frame}")
        s = (1,) * (len(frame) - len(shape)) + tuple(shape)
        for a, b in zip(s, frame):
            if a != b and a != 1:
                raise AnalysisError(f"{what} of shape {shape} does not broadcast to the frame {frame}")
        lead_full = all(s[d] == frame[d] for d in range(L))
        lead_none = all(s[d] == 1 for d in range(L))
        j = s[-1] == N
        if not (lead_full or lead_none):
            raise AnalysisError(f"{what} of shape {shape} broadcasts over some leading dims of {frame}; only "
                                "full tensors, per-row (..., 1) and per-column (N,) operands are supported")
        if lead_full:
            return "J" if j else "R"
        return "C" if j else "S"

    kinds: dict[int, str] = {}
    exts: list[Ext] = []
    used_names: set[str] = set()

    def fresh(base: str) -> str:
        base = _ident(base)
        name, k = base, 1
        while name in used_names or name.upper() in {u.upper() for u in used_names} or name in ("workspace", "tiling"):
            name, k = f"{base}{k}", k + 1
        used_names.add(name)
        return name

    roots_seen: dict[int, tuple[int, ...]] = {}
    for e in st.externals:
        node = g.nodes[e]
        root = root_of(e)
        rnode = g.nodes[root]
        if node.dtype != "f32" or rnode.op not in ("input", "param"):
            raise AnalysisError(f"{node.origin}: only float32 inputs and parameters can be kernel operands")
        if root in roots_seen and roots_seen[root] != node.shape:
            raise AnalysisError(f"{rnode.origin} is read through two different views")
        roots_seen[root] = node.shape
        role = classify(node.shape, f"operand {node.origin}")
        kinds[e] = role
        if rnode.op == "input":
            name = fresh(rnode.attrs["name"])
            pyexpr = rnode.attrs["name"]
        else:
            name = fresh(rnode.attrs["path"].replace(".", "_"))
            pyexpr = "self." + rnode.attrs["path"]
        exts.append(Ext(e, root, name, role, pyexpr, tuple(node.shape)))
    # order: forward inputs first (by position), then parameters
    exts.sort(key=lambda x: (g.nodes[x.root].op != "input", g.nodes[x.root].attrs.get("index", 0), x.root))

    reduces: list[int] = []
    inside = set(st.nodes)
    for i in st.nodes:
        n = g.nodes[i]
        if n.op == "reduce":
            src = n.args[0]
            dims = n.attrs["dims"]
            if dims is None:
                # a whole-tensor sum/mean ending the kernel: rows reduced per tile, blocks combined by an
                # atomic add into the zero-filled output
                if i != st.out or n.attrs["fn"] not in ("sum", "mean") or kinds.get(src) != "J" or g.half:
                    raise AnalysisError(f"{n.origin}: a reduction over the whole tensor other than a float32 sum/mean "
                                        "of a full tensor ending the kernel")
                kinds[i] = "G"
                reduces.append(i)
                continue
            if dims != [len(g.nodes[src].shape) - 1] or len(g.nodes[src].shape) != len(frame):
                raise AnalysisError(f"{n.origin}: reduction over dims {dims} (only the last dimension)")
            if kinds.get(src) != "J":
                raise AnalysisError(f"{n.origin}: reduction of a value that does not vary along rows and columns")
            if n.attrs["fn"] not in REDUCE_FNS:
                raise AnalysisError(f"{n.origin}: reduction {n.attrs['fn']}")
            kinds[i] = "R"
            reduces.append(i)
        elif n.op == "unary":
            k = kinds[n.args[0]]
            if k == "S":
                raise AnalysisError(f"{n.origin}: {n.attrs['fn']} of a scalar parameter")
            kinds[i] = k
        elif n.op == "binary":
            ks = {kinds[a] for a in n.args if isinstance(a, int)}
            if "J" in ks or {"R", "C"} <= ks:
                kinds[i] = "J"
            elif "R" in ks:
                kinds[i] = "R"
            elif "C" in ks:
                kinds[i] = "C"
            else:
                kinds[i] = "S"
            if n.attrs["fn"] not in ("add", "sub", "mul", "div", "max", "min"):
                raise AnalysisError(f"{n.origin}: binary op {n.attrs['fn']}")
            if kinds[i] == "J" and n.shape[-1] != N and N != 1:
                raise AnalysisError(f"{n.origin}: shape {n.shape} does not fit the frame {frame}")
        else:
            raise AnalysisError(f"{n.origin}: {n.op} has no Ascend C template")
        for a in n.args:
            if isinstance(a, int) and a not in inside and a not in kinds:
                raise AnalysisError(f"{n.origin}: reads a value that is not a kernel operand")
    out = st.out
    out_kind = kinds[out]
    if out_kind not in ("J", "R", "G"):
        raise AnalysisError("the output does not vary along the rows (nothing per-row to compute)")
    out_shape = tuple(g.nodes[g.output].shape)
    if _prod(out_shape) != {"J": rows * N, "R": rows, "G": 1}[out_kind]:
        raise AnalysisError(f"output shape {out_shape} does not match the frame {frame}")
    frame_ext = next((k for k, e in enumerate(exts) if e.role == "J" and _prod(e.shape) == rows * N), -1)
    flat = (not reduces and out_kind == "J" and frame_ext >= 0 and all(e.role in ("J", "S") for e in exts)
            and all(kinds[i] in ("J", "S") for i in st.nodes))
    family = "ascend_elementwise" if flat else "ascend_row"
    fns = {g.nodes[i].attrs.get("fn") for i in st.nodes}
    r_unary = {g.nodes[i].attrs.get("fn") for i in st.nodes if kinds[i] == "R" and g.nodes[i].op == "unary"}
    if flat:
        op_class = "elementwise"
    elif out_kind == "G":
        op_class = "full-reduction"
    elif out_kind == "R":
        op_class = "reduction"
    elif "amax" in fns and "exp" in fns:
        op_class = "softmax"
    elif reduces and r_unary & {"sqrt", "rsqrt"}:
        op_class = "normalization"
    elif reduces:
        op_class = "row-reduction-fusion"
    else:
        op_class = "broadcast-elementwise"
    init_source = g.init_source if (not task_source or own_init(task_source)) else ""
    return AscendOp(g, list(st.nodes), kinds, exts, out, out_kind, out_shape, frame, rows, N, family, op_class,
                    _snake(task_name), frame_ext, reduces, init_source)


def _prepare_col(plan: Plan, task_name: str, task_source: str) -> AscendOp:
    """A reduction over a run of middle dimensions: (outer, mid, inner) -> (outer, inner)."""
    g = plan.graph
    st = plan.stages[0]
    r = g.nodes[st.out]
    src = r.args[0]
    root = plan.aliases.get(src, src)
    shape = tuple(g.nodes[src].shape)
    dims = r.attrs["dims"]
    fn = r.attrs["fn"]
    if fn not in REDUCE_FNS:
        raise AnalysisError(f"{r.origin}: reduction {fn}")
    if g.nodes[root].op not in ("input", "param") or g.nodes[src].dtype != "f32":
        raise AnalysisError(f"{r.origin}: the reduced tensor is not a float input")
    d0, d1 = dims[0], dims[-1]
    outer, mid, inner = _prod(shape[:d0]), _prod(shape[d0:d1 + 1]), _prod(shape[d1 + 1:])
    if inner < 8:
        raise AnalysisError(f"{r.origin}: a reduction over the trailing dims {dims} with fewer than 8 values left per row")
    if outer * mid * inner >= 2 ** 31:
        raise AnalysisError(f"the tensor has {outer * mid * inner} elements; 32-bit tiling fields cannot address it")
    rnode = g.nodes[root]
    name = _ident(rnode.attrs["name"] if rnode.op == "input" else rnode.attrs["path"].replace(".", "_"))
    if name in ("out", "workspace", "tiling"):
        name += "1"
    pyexpr = rnode.attrs["name"] if rnode.op == "input" else "self." + rnode.attrs["path"]
    ext = Ext(src, root, name, "J", pyexpr, shape)
    out_shape = tuple(g.nodes[g.output].shape)
    init_source = g.init_source if (not task_source or own_init(task_source)) else ""
    frame_ext = 0 if tuple(rnode.shape) == shape else -1
    return AscendOp(g, [st.out], {src: "J", st.out: "M"}, [ext], st.out, "M", out_shape, shape, outer, inner,
                    "ascend_colreduce", "reduction", _snake(task_name), frame_ext, [st.out], init_source,
                    (outer, mid, inner, d0, d1))


# ------------------------------------------------------------------------------ instruction sequences

# scratch buffers a unary function needs (besides dst and src, which never alias)
UNARY_SCRATCH = {"rsqrt": 1, "recip": 1, "sigmoid": 1, "tanh": 1, "gelu_tanh": 1, "gelu": 2, "erf": 2, "elu": 1,
                 "selu": 1, "softplus": 2, "mish": 2, "softsign": 1, "hardswish": 1, "logsigmoid": 1, "powc": 1}

_AS_P = 0.3275911  # Abramowitz & Stegun 7.1.26: erf(z) ~ 1 - poly(t) exp(-z^2), t = 1 / (1 + p z), |err| < 1.5e-7
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class Scalar:
    """A scalar operand: a literal (``value`` known) or a C++ float expression."""

    def __init__(self, expr: str, value: float | None = None):
        self.expr, self.value = expr, value

    def neg(self) -> str:
        return flit(-self.value) if self.value is not None else f"(-{self.expr})"

    def recip(self) -> str:
        if self.value is not None:
            return flit(1.0 / self.value) if self.value != 0 else "INFINITY"
        return f"(1.0f / {self.expr})"


def _poly(D: str, t: str, n: str) -> list[str]:
    a1, a2, a3, a4, a5 = _AS_A
    return [f"Muls({D}, {t}, {flit(a5)}, {n});", f"Adds({D}, {D}, {flit(a4)}, {n});", f"Mul({D}, {D}, {t}, {n});",
            f"Adds({D}, {D}, {flit(a3)}, {n});", f"Mul({D}, {D}, {t}, {n});", f"Adds({D}, {D}, {flit(a2)}, {n});",
            f"Mul({D}, {D}, {t}, {n});", f"Adds({D}, {D}, {flit(a1)}, {n});", f"Mul({D}, {D}, {t}, {n});"]


def unary_code(fn: str, attrs: dict[str, Any], D: str, X: str, T: list[str], n: str) -> list[str]:
    """Instructions computing ``D = fn(X)`` over ``n`` elements (``T``: scratch tensors)."""
    c: list[str] = []
    e = c.append
    if fn == "relu":
        e(f"Relu({D}, {X}, {n});")
    elif fn == "abs":
        e(f"Abs({D}, {X}, {n});")
    elif fn == "exp":
        e(f"Exp({D}, {X}, {n});")
    elif fn == "log":
        e(f"Ln({D}, {X}, {n});")
    elif fn == "sqrt":
        e(f"Sqrt({D}, {X}, {n});")
    elif fn == "neg":
        e(f"Muls({D}, {X}, {flit(-1.0)}, {n});")
    elif fn == "square":
        e(f"Mul({D}, {X}, {X}, {n});")
    elif fn == "rsqrt":  # 1 / sqrt(x) with an exact Div (Rsqrt is approximate on the device)
        c += [f"Sqrt({D}, {X}, {n});", f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});"]
    elif fn == "recip":
        c += [f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {X}, {n});"]
    elif fn == "sigmoid":  # 1 / (1 + exp(-x)): exp overflows to inf for x << 0 and 1 / inf = 0
        c += [f"Muls({D}, {X}, {flit(-1.0)}, {n});", f"Exp({D}, {D}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});"]
    elif fn == "silu":  # x / (1 + exp(-x))
        c += [f"Muls({D}, {X}, {flit(-1.0)}, {n});", f"Exp({D}, {D}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Div({D}, {X}, {D}, {n});"]
    elif fn == "tanh":  # 2 / (1 + exp(-2x)) - 1: saturates to +-1 without inf/inf
        c += [f"Muls({D}, {X}, {flit(-2.0)}, {n});", f"Exp({D}, {D}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Duplicate({T[0]}, 2.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});", f"Adds({D}, {D}, {flit(-1.0)}, {n});"]
    elif fn == "gelu_tanh":  # x * sigmoid(2 k (x + 0.044715 x^3))
        k = 2.0 * math.sqrt(2.0 / math.pi)
        c += [f"Mul({T[0]}, {X}, {X}, {n});", f"Muls({T[0]}, {T[0]}, {flit(0.044715)}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Mul({T[0]}, {T[0]}, {X}, {n});",
              f"Muls({T[0]}, {T[0]}, {flit(-k)}, {n});", f"Exp({T[0]}, {T[0]}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Div({D}, {X}, {T[0]}, {n});"]
    elif fn == "gelu":  # relu(x) - |x|/2 * poly(t) exp(-x^2/2), t = 1 / (1 + p |x| / sqrt 2)
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[1]}, {T[0]}, {flit(_AS_P / math.sqrt(2.0))}, {n});",
              f"Adds({T[1]}, {T[1]}, 1.0f, {n});", f"Duplicate({D}, 1.0f, {n});", f"Div({T[1]}, {D}, {T[1]}, {n});"]
        c += _poly(D, T[1], n)
        c += [f"Mul({T[1]}, {X}, {X}, {n});", f"Muls({T[1]}, {T[1]}, {flit(-0.5)}, {n});", f"Exp({T[1]}, {T[1]}, {n});",
              f"Mul({D}, {D}, {T[1]}, {n});", f"Mul({D}, {D}, {T[0]}, {n});", f"Muls({D}, {D}, {flit(-0.5)}, {n});",
              f"Relu({T[0]}, {X}, {n});", f"Add({D}, {D}, {T[0]}, {n});"]
    elif fn == "erf":  # sign(x) (1 - poly(t) exp(-x^2)), t = 1 / (1 + p |x|)
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[1]}, {T[0]}, {flit(_AS_P)}, {n});",
              f"Adds({T[1]}, {T[1]}, 1.0f, {n});", f"Duplicate({D}, 1.0f, {n});", f"Div({T[1]}, {D}, {T[1]}, {n});"]
        c += _poly(D, T[1], n)
        c += [f"Mul({T[1]}, {X}, {X}, {n});", f"Muls({T[1]}, {T[1]}, {flit(-1.0)}, {n});", f"Exp({T[1]}, {T[1]}, {n});",
              f"Mul({D}, {D}, {T[1]}, {n});", f"Muls({D}, {D}, {flit(-1.0)}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Adds({T[0]}, {T[0]}, 1e-30f, {n});", f"Div({T[0]}, {X}, {T[0]}, {n});", f"Mul({D}, {D}, {T[0]}, {n});"]
    elif fn in ("elu", "selu"):  # max(x, 0) + alpha (exp(min(x, 0)) - 1)
        alpha = 1.6732632423543772 if fn == "selu" else float(attrs.get("alpha", 1.0))
        c += [f"Mins({T[0]}, {X}, 0.0f, {n});", f"Exp({T[0]}, {T[0]}, {n});", f"Adds({T[0]}, {T[0]}, {flit(-1.0)}, {n});",
              f"Muls({T[0]}, {T[0]}, {flit(alpha)}, {n});", f"Relu({D}, {X}, {n});", f"Add({D}, {D}, {T[0]}, {n});"]
        if fn == "selu":
            e(f"Muls({D}, {D}, {flit(1.0507009873554805)}, {n});")
    elif fn == "softplus":  # (max(z, 0) + log(1 + exp(-|z|))) / beta, z = beta x
        beta = float(attrs.get("beta", 1.0))
        if float(attrs.get("threshold", 20.0)) < 15.0:
            raise AnalysisError("softplus with a threshold below 15 (the linear branch is not emulated)")
        z = X
        if beta != 1.0:
            e(f"Muls({T[1]}, {X}, {flit(beta)}, {n});")
            z = T[1]
        c += [f"Abs({D}, {z}, {n});", f"Muls({D}, {D}, {flit(-1.0)}, {n});", f"Exp({D}, {D}, {n});",
              f"Adds({D}, {D}, 1.0f, {n});", f"Ln({D}, {D}, {n});", f"Relu({T[0]}, {z}, {n});",
              f"Add({D}, {D}, {T[0]}, {n});"]
        if beta != 1.0:
            e(f"Muls({D}, {D}, {flit(1.0 / beta)}, {n});")
    elif fn == "mish":  # x tanh(softplus(x)); softplus >= 0, so tanh = (1 - e) / (1 + e) with e = exp(-2 sp) <= 1
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[0]}, {T[0]}, {flit(-1.0)}, {n});", f"Exp({T[0]}, {T[0]}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Ln({T[0]}, {T[0]}, {n});", f"Relu({T[1]}, {X}, {n});",
              f"Add({T[0]}, {T[0]}, {T[1]}, {n});", f"Muls({T[0]}, {T[0]}, {flit(-2.0)}, {n});",
              f"Exp({T[0]}, {T[0]}, {n});", f"Muls({T[1]}, {T[0]}, {flit(-1.0)}, {n});",
              f"Adds({T[1]}, {T[1]}, 1.0f, {n});", f"Adds({T[0]}, {T[0]}, 1.0f, {n});",
              f"Div({T[1]}, {T[1]}, {T[0]}, {n});", f"Mul({D}, {X}, {T[1]}, {n});"]
    elif fn == "softsign":
        c += [f"Abs({T[0]}, {X}, {n});", f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Div({D}, {X}, {T[0]}, {n});"]
    elif fn in ("hardsigmoid", "hardswish"):
        H = D if fn == "hardsigmoid" else T[0]
        c += [f"Muls({H}, {X}, {flit(1.0 / 6.0)}, {n});", f"Adds({H}, {H}, 0.5f, {n});", f"Maxs({H}, {H}, 0.0f, {n});",
              f"Mins({H}, {H}, 1.0f, {n});"]
        if fn == "hardswish":
            e(f"Mul({D}, {X}, {H}, {n});")
    elif fn == "relu6":
        c += [f"Relu({D}, {X}, {n});", f"Mins({D}, {D}, 6.0f, {n});"]
    elif fn == "leaky_relu":
        e(f"LeakyRelu({D}, {X}, {flit(float(attrs['slope']))}, {n});")
    elif fn == "clamp":
        lo, hi = attrs.get("lo"), attrs.get("hi")
        src = X
        if lo is not None:
            e(f"Maxs({D}, {src}, {flit(lo)}, {n});")
            src = D
        if hi is not None:
            e(f"Mins({D}, {src}, {flit(hi)}, {n});")
            src = D
        if src == X:
            e(f"Muls({D}, {X}, 1.0f, {n});")
    elif fn == "log1p":
        c += [f"Adds({D}, {X}, 1.0f, {n});", f"Ln({D}, {D}, {n});"]
    elif fn == "expm1":
        c += [f"Exp({D}, {X}, {n});", f"Adds({D}, {D}, {flit(-1.0)}, {n});"]
    elif fn == "logsigmoid":  # min(x, 0) - log(1 + exp(-|x|))
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[0]}, {T[0]}, {flit(-1.0)}, {n});", f"Exp({T[0]}, {T[0]}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Ln({T[0]}, {T[0]}, {n});", f"Mins({D}, {X}, 0.0f, {n});",
              f"Sub({D}, {D}, {T[0]}, {n});"]
    elif fn == "powc":
        p = float(attrs["p"])
        if p == 0.0:
            e(f"Duplicate({D}, 1.0f, {n});")
        elif p == int(p) and abs(p) <= 8:
            q = int(abs(p))
            e(f"Mul({D}, {X}, {X}, {n});" if q >= 2 else f"Muls({D}, {X}, 1.0f, {n});")
            for _ in range(q - 2):
                e(f"Mul({D}, {D}, {X}, {n});")
            if p < 0:
                c += [f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});"]
        else:  # exp(p ln x): NaN for x < 0 as in torch, 0 for x = 0 and p > 0
            c += [f"Ln({D}, {X}, {n});", f"Muls({D}, {D}, {flit(p)}, {n});", f"Exp({D}, {D}, {n});"]
    else:
        raise AnalysisError(f"no Ascend C template for the elementwise function {fn!r}")
    return c


BIN_OP = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min"}


def binary_code(fn: str, D: str, A: str | Scalar, B: str | Scalar, n: str) -> list[str]:
    """``D = A fn B`` over ``n`` elements; ``A``/``B`` are tensor views or :class:`Scalar` (not both)."""
    a_s, b_s = isinstance(A, Scalar), isinstance(B, Scalar)
    if not a_s and not b_s:
        return [f"{BIN_OP[fn]}({D}, {A}, {B}, {n});"]
    if a_s and b_s:
        raise AnalysisError("binary op of two scalars inside a vector program")
    if a_s and fn in ("add", "mul", "max", "min"):
        A, B, a_s, b_s = B, A, False, True
    if b_s:
        assert isinstance(B, Scalar)
        if fn == "add":
            return [f"Adds({D}, {A}, {B.expr}, {n});"]
        if fn == "sub":
            return [f"Adds({D}, {A}, {B.neg()}, {n});"]
        if fn == "mul":
            return [f"Muls({D}, {A}, {B.expr}, {n});"]
        if fn == "div":
            return [f"Muls({D}, {A}, {B.recip()}, {n});"]
        if fn == "max":
            return [f"Maxs({D}, {A}, {B.expr}, {n});"]
        return [f"Mins({D}, {A}, {B.expr}, {n});"]
    assert isinstance(A, Scalar)
    if fn == "sub":  # s - x
        return [f"Muls({D}, {B}, {flit(-1.0)}, {n});", f"Adds({D}, {D}, {A.expr}, {n});"]
    # s / x
    return [f"Duplicate({D}, {A.expr}, {n});", f"Div({D}, {D}, {B}, {n});"]


def scalar_binary(fn: str, a: Scalar, b: Scalar) -> Scalar:
    if a.value is not None and b.value is not None:
        v = {"add": a.value + b.value, "sub": a.value - b.value, "mul": a.value * b.value,
             "div": a.value / b.value if b.value else math.inf, "max": max(a.value, b.value),
             "min": min(a.value, b.value)}[fn]
        return Scalar(flit(v), v)
    if fn in ("max", "min"):
        cmp = ">" if fn == "max" else "<"
        return Scalar(f"({a.expr} {cmp} {b.expr} ? {a.expr} : {b.expr})")
    op = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[fn]
    return Scalar(f"({a.expr} {op} {b.expr})")


# ------------------------------------------------------------------------------------ buffer pools


class Pool:
    """Lowest-free-index allocation of same-size UB buffers."""

    def __init__(self) -> None:
        self.busy: set[int] = set()
        self.size = 0

    def take(self) -> int:
        i = 0
        while i in self.busy:
            i += 1
        self.busy.add(i)
        self.size = max(self.size, i + 1)
        return i

    def give(self, i: int) -> None:
        self.busy.discard(i)


REDUCE_OP = {"sum": "Sum", "mean": "Sum", "amax": "Max", "amin": "Min"}
COMBINE_OP = {"sum": "Add", "mean": "Add", "amax": "Max", "amin": "Min"}
IDENTITY = {"sum": "0.0f", "mean": "0.0f", "amax": "(-INFINITY)", "amin": "INFINITY"}

SYNC_VS = ("{ event_t evVS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S)); "
           "SetFlag<HardEvent::V_S>(evVS); WaitFlag<HardEvent::V_S>(evVS); }")


def _indent(lines: list[str], n: int) -> list[str]:
    pad = " " * n
    return [pad + ln if ln else ln for ln in lines]


# ---------------------------------------------------------------------------------- row kernels


@dataclass
class Consts:
    """What the host needs to size the tiles (mirrored by :func:`geometry`): UB bytes per element of
    each kind of buffer."""

    row_bytes: int = 0  # per element of a tile (tileRows x cPad)
    col_bytes: int = 0  # per element of a chunk row (cPad)
    slot_bytes: int = 0  # per row slot (kPad)
    bcast_bytes: int = 0  # per element of 8 kPad
    fold_bytes: int = 0  # per element of 64 tileRows
    scalar_bytes: int = 0  # fixed
    work: bool = False  # the ReduceX work tensor
    align: int = 8  # elements per 32 bytes of the IO dtype (8 float, 16 half)
    vecin_buffers: int = 0  # buffers on the VECIN position (at most 8)


class RowKernel:
    """Emits the kernel class of the ``ascend_row`` family for one schedule."""

    def __init__(self, op: AscendOp, knobs: dict[str, Any]):
        self.op, self.g = op, op.graph
        self.bn = int(knobs.get("buffer_num", 1))
        self.repeat = knobs.get("vec_form", "count") == "repeat"
        # without reductions there is one pass anyway: the streaming loop (chunks when rows are long)
        self.resident = knobs.get("row_mode", "stream") == "resident" and bool(op.reduces)
        self.kinds = op.kinds
        self.nodes = op.nodes
        self.ext_by_nid = {e.nid: e for e in op.exts}
        users: dict[int, list[int]] = {i: [] for i in list(self.nodes) + [e.nid for e in op.exts]}
        for i in self.nodes:
            for a in self.g.nodes[i].args:
                if isinstance(a, int) and a in users:
                    users[a].append(i)
        self.users = users
        # R slots: one per R node (no reuse), scratch slots after them
        self.slot_of: dict[int, int] = {}
        for i in self.nodes:
            if self.kinds[i] in ("R", "G"):
                self.slot_of[i] = len(self.slot_of)
        r_scratch = 0
        for i in self.nodes:
            n = self.g.nodes[i]
            if self.kinds[i] == "R" and n.op == "unary":
                r_scratch = max(r_scratch, UNARY_SCRATCH.get(n.attrs["fn"], 0))
        self.r_scratch = [len(self.slot_of) + k for k in range(r_scratch)]
        self.n_slots = len(self.slot_of) + r_scratch
        # Brcb buffers (repeat form): R values read by J nodes
        self.bc_of: dict[int, int] = {}
        if self.repeat:
            for v in [e.nid for e in op.exts if e.role == "R"] + [i for i in self.nodes if self.kinds[i] == "R"]:
                if any(self.kinds[u] == "J" for u in users[v]):
                    self.bc_of[v] = len(self.bc_of)
        self.jpool, self.cpool = Pool(), Pool()
        self.flat_only = False
        self.half = bool(getattr(self.g, "half", False))
        self.T = "half" if self.half else "float"  # the dtype in GM and in the queues
        self.A = 16 if self.half else 8  # elements per 32-byte block of that dtype
        self.io = 2 if self.half else 4
        self.out_compute = "fo" if self.half else "o"  # where the output is computed (float)
        if self.half:  # float copies of the per-row inputs
            for e in op.exts:
                if e.role == "R":
                    self.slot_of[e.nid] = self.n_slots
                    self.n_slots += 1

    # ------------------------------------------------------------------------------ naming
    def ext_var(self, e: Ext) -> str:
        """The float tensor computations read for an input (its queue tensor, or its float copy)."""
        return f"f_{e.name}" if self.half else f"l_{e.name}"

    def io_var(self, e: Ext) -> str:
        return f"l_{e.name}"

    def pad(self, x: str) -> str:
        return f"({x} + {self.A - 1}) / {self.A} * {self.A}"

    def casts_in(self, es: list[Ext]) -> list[str]:
        """half: convert freshly dequeued J/C inputs to float."""
        if not self.half:
            return []
        out: list[str] = []
        for e in es:
            if e.role == "J":
                out += self._flat_or_rows([f"Cast(f_{e.name}, l_{e.name}, RoundMode::CAST_NONE, nflat);"],
                                          [f"Cast(f_{e.name}[r * ccp], l_{e.name}[r * ccp], RoundMode::CAST_NONE, cc);"])
            elif e.role == "C":
                out.append(f"Cast(f_{e.name}, l_{e.name}, RoundMode::CAST_NONE, cc);")
        return out

    def cast_out(self) -> list[str]:
        if not self.half:
            return []
        return self._flat_or_rows(["Cast(o, fo, RoundMode::CAST_RINT, nflat);"],
                                  ["Cast(o[r * ccp], fo[r * ccp], RoundMode::CAST_RINT, cc);"])

    def scalar_of(self, a: Any, vals: dict[int, Any]) -> Scalar | None:
        if isinstance(a, Const):
            return Scalar(flit(a.value), float(a.value))
        v = vals.get(a)
        return v if isinstance(v, Scalar) else None

    # ---------------------------------------------------------------------------- phases
    def deps(self, target: int) -> list[int]:
        """J and C nodes of the stage needed to compute ``target`` (R values are available)."""
        need: set[int] = set()
        stack = [target]
        while stack:
            x = stack.pop()
            if x in need or x not in self.kinds or x in self.ext_by_nid:
                continue
            if self.kinds[x] not in ("J", "C") and x != target:
                continue
            if self.kinds[x] == "S":
                continue
            need.add(x)
            stack.extend(a for a in self.g.nodes[x].args if isinstance(a, int))
        return [i for i in self.nodes if i in need and self.kinds[i] in ("J", "C")]

    def loads_for(self, items: list[int]) -> list[Ext]:
        """J and C inputs read by ``items`` (node ids; a reduce reads its operand)."""
        want: list[int] = []
        for i in items:
            for a in self.g.nodes[i].args:
                if isinstance(a, int) and a in self.ext_by_nid and self.ext_by_nid[a].role in ("J", "C") and a not in want:
                    want.append(a)
        return [e for e in self.op.exts if e.nid in want]

    # ------------------------------------------------------------------------- compute block
    def block(self, items: list[int], out_node: int | None, single_chunk: bool) -> list[str]:
        """Code computing ``items`` (nodes in order) on the current chunk. J/C nodes land in pool
        buffers (``out_node`` in the output tensor ``o``), reductions in their R slots; R nodes other
        than reductions are computed here only when listed (resident mode)."""
        g = self.g
        lines: list[str] = []
        vals: dict[int, Any] = {}
        for e in self.op.exts:
            if e.role in ("J", "C"):
                vals[e.nid] = self.ext_var(e)
            elif e.role == "R":
                vals[e.nid] = f"rs{self.slot_of[e.nid]}" if self.half else f"lr_{e.name}"
            else:
                vals[e.nid] = Scalar(f"s_{e.name}")
        for i in self.nodes:
            if self.kinds[i] in ("R", "G"):
                vals[i] = f"rs{self.slot_of[i]}"
            elif self.kinds[i] == "S":
                n = g.nodes[i]
                a, b = (self.scalar_of(x, vals) for x in n.args)
                assert a is not None and b is not None
                vals[i] = scalar_binary(n.attrs["fn"], a, b)
        # last use inside this block
        last: dict[int, int] = {}
        for pos, i in enumerate(items):
            for a in g.nodes[i].args:
                if isinstance(a, int):
                    last[a] = pos
        owned: dict[int, tuple[str, int]] = {}  # node -> (pool kind, index)
        for pos, i in enumerate(items):
            n = g.nodes[i]
            k = self.kinds[i]
            if n.op == "reduce":
                lines += self.reduce_code(i, vals[n.args[0]], single_chunk)
            elif k == "R":
                lines += self.r_node(i, vals)
            else:
                if i == out_node:
                    vals[i] = self.out_compute
                else:
                    pool = self.jpool if k == "J" else self.cpool
                    idx = pool.take()
                    owned[i] = (k, idx)
                    vals[i] = f"t{idx}" if k == "J" else f"cb{idx}"
                lines += self.jc_node(i, vals)
            for a in n.args:
                if isinstance(a, int) and last.get(a) == pos and a in owned:
                    kind, idx = owned.pop(a)
                    (self.jpool if kind == "J" else self.cpool).give(idx)
        for kind, idx in owned.values():
            (self.jpool if kind == "J" else self.cpool).give(idx)
        return lines

    def _scratch(self, kind: str, count: int) -> tuple[list[str], list[int]]:
        pool = self.jpool if kind == "J" else self.cpool
        idx = [pool.take() for _ in range(count)]
        return [f"t{i}" if kind == "J" else f"cb{i}" for i in idx], idx

    def jc_node(self, i: int, vals: dict[int, Any]) -> list[str]:
        g = self.g
        n = g.nodes[i]
        k = self.kinds[i]
        D = vals[i]
        if k == "C":  # one chunk row: count cc
            if n.op == "unary":
                names, idx = self._scratch("C", UNARY_SCRATCH.get(n.attrs["fn"], 0))
                code = unary_code(n.attrs["fn"], n.attrs, D, vals[n.args[0]], names, "cc")
                for j in idx:
                    self.cpool.give(j)
                return code
            A, B = (self.scalar_of(a, vals) or vals[a] for a in n.args)
            return binary_code(n.attrs["fn"], D, A, B, "cc")
        # J node
        if n.op == "unary":
            names, idx = self._scratch("J", UNARY_SCRATCH.get(n.attrs["fn"], 0))
            flat = unary_code(n.attrs["fn"], n.attrs, D, vals[n.args[0]], names, "nflat")
            row = unary_code(n.attrs["fn"], n.attrs, f"{D}[r * ccp]", f"{vals[n.args[0]]}[r * ccp]",
                             [f"{t}[r * ccp]" for t in names], "cc")
            for j in idx:
                self.jpool.give(j)
            return self._flat_or_rows(flat, row)
        fn = n.attrs["fn"]
        okinds = [("K" if isinstance(a, Const) else self.kinds[a]) for a in n.args]
        if all(ok in ("J", "S", "K") for ok in okinds):
            A, B = (self.scalar_of(a, vals) or vals[a] for a in n.args)
            flat = binary_code(fn, D, A, B, "nflat")
            row = binary_code(fn, f"{D}[r * ccp]", A if isinstance(A, Scalar) else f"{A}[r * ccp]",
                              B if isinstance(B, Scalar) else f"{B}[r * ccp]", "cc")
            return self._flat_or_rows(flat, row)
        # a broadcast operand (per-row R or per-column C)
        if self.repeat:
            return self._repeat_binary(fn, D, n.args, okinds, vals)
        ops: list[Any] = []
        reads: list[str] = []
        for a, ok in zip(n.args, okinds):
            if ok == "J":
                ops.append(f"{vals[a]}[r * ccp]")
            elif ok == "C":
                ops.append(vals[a])
            elif ok == "R":
                reads.append(f"const float sv{a} = {vals[a]}.GetValue(r);")
                ops.append(Scalar(f"sv{a}"))
            else:
                ops.append(self.scalar_of(a, vals))
        body = reads + binary_code(fn, f"{D}[r * ccp]", ops[0], ops[1], "cc")
        pre = [SYNC_VS] if reads else []
        return pre + ["for (uint32_t r = 0; r < kk; ++r) {"] + _indent(body, 4) + ["}"]

    def _flat_or_rows(self, flat: list[str], row: list[str]) -> list[str]:
        if self.flat_only:
            return flat
        return (["if (flat) {"] + _indent(flat, 4) + ["} else {", "    for (uint32_t r = 0; r < kk; ++r) {"] +
                _indent(row, 8) + ["    }", "}"])

    def _repeat_binary(self, fn: str, D: str, args: list[Any], okinds: list[str], vals: dict[int, Any]) -> list[str]:
        views, blk, rep = [], [], []
        for a, ok in zip(args, okinds):
            if ok == "J":
                views.append(f"{vals[a]}[c]")
                blk.append("1")
                rep.append("rs")
            elif ok == "C":
                views.append(f"{vals[a]}[c]")
                blk.append("1")
                rep.append("0")
            elif ok == "R":
                views.append(f"bc{self.bc_of[a]}")
                blk.append("0")
                rep.append("1")
            else:
                raise AnalysisError("a scalar operand next to a broadcast operand")
        params = f"BinaryRepeatParams(1, {blk[0]}, {blk[1]}, rs, {rep[0]}, {rep[1]})"
        return ["for (uint32_t c = 0; c < cc; c += 64) {",
                "    uint64_t m = cc - c < 64 ? cc - c : 64;",
                f"    {BIN_OP[fn]}({D}[c], {views[0]}, {views[1]}, m, static_cast<uint8_t>(kk), {params});",
                "}"]

    def r_node(self, i: int, vals: dict[int, Any]) -> list[str]:
        """An R node other than a reduction: vector ops over the kp slots."""
        n = self.g.nodes[i]
        D = vals[i]
        if n.op == "unary":
            need = UNARY_SCRATCH.get(n.attrs["fn"], 0)
            names = [f"rs{j}" for j in self.r_scratch[:need]]
            code = unary_code(n.attrs["fn"], n.attrs, D, vals[n.args[0]], names, "kp")
        else:
            A, B = (self.scalar_of(a, vals) or vals[a] for a in n.args)
            code = binary_code(n.attrs["fn"], D, A, B, "kp")
        return code + self.brcb(i)

    def brcb(self, v: int) -> list[str]:
        if v not in self.bc_of:
            return []
        src = f"rs{self.slot_of[v]}" if v in self.slot_of else f"lr_{self.ext_by_nid[v].name}"
        return [f"Brcb(bc{self.bc_of[v]}, {src}, static_cast<uint8_t>(kp / 8), BrcbRepeatParams(1, 8));"]

    def reduce_code(self, i: int, B: str, single_chunk: bool) -> list[str]:
        n = self.g.nodes[i]
        fn = n.attrs["fn"]
        T = f"rs{self.slot_of[i]}"
        code: list[str] = []
        if single_chunk:
            code.append(f"Duplicate({T}, {IDENTITY[fn]}, static_cast<int32_t>(kp));")
            code += self._reduce_into(fn, T, B)
        else:
            code += ["if (c0 == 0) {"] + _indent(self._reduce_into(fn, T, B), 4) + ["} else {"]
            code += _indent(self._reduce_into(fn, "rpart", B), 4)
            code += [f"    {COMBINE_OP[fn]}({T}, {T}, rpart, static_cast<int32_t>(kk));", "}"]
        if self.resident:  # one chunk per row: the row values are final here
            code += self.finalize(i)
        return code

    def _reduce_into(self, fn: str, T: str, B: str) -> list[str]:
        R = REDUCE_OP[fn]
        order = "" if R == "Sum" else ", ReduceOrder::ORDER_ONLY_VALUE"
        if self.repeat:
            return ["if (cc <= 64) {",
                    f"    WholeReduce{R}({T}, {B}, static_cast<int32_t>(cc), static_cast<int32_t>(kk), 1, 1, "
                    f"static_cast<int32_t>(ccp / 8){order});",
                    "} else {",
                    f"    Muls(fold, {B}, 1.0f, static_cast<uint64_t>(64), static_cast<uint8_t>(kk), "
                    "UnaryRepeatParams(1, 1, 8, rs));",
                    "    for (uint32_t c = 64; c < cc; c += 64) {",
                    "        uint64_t m = cc - c < 64 ? cc - c : 64;",
                    f"        {COMBINE_OP[fn]}(fold, fold, {B}[c], m, static_cast<uint8_t>(kk), "
                    "BinaryRepeatParams(1, 1, 1, 8, 8, rs));",
                    "    }",
                    f"    WholeReduce{R}({T}, fold, 64, static_cast<int32_t>(kk), 1, 1, 8{order});",
                    "}"]
        return ["if (kk == 1) {",
                f"    Reduce{R}({T}, {B}, work, static_cast<int32_t>(cc));",
                "} else {",
                "    for (uint32_t r = 0; r < kk; ++r) {",
                f"        Reduce{R}(blk[r * 8], {B}[r * ccp], work, static_cast<int32_t>(cc));",
                "    }",
                f"    WholeReduce{R}({T}, blk, 1, static_cast<int32_t>(kk), 1, 1, 1{order});",
                "}"]

    def finalize(self, i: int) -> list[str]:
        n = self.g.nodes[i]
        code = []
        if self.kinds[i] == "G":  # the tile's rows into the block's running total (mean: scaled at the end)
            return [f"ReduceSum(gpart, rs{self.slot_of[i]}, gwork, static_cast<int32_t>(kp));",
                    "Add(gacc, gacc, gpart, 1);"]
        if n.attrs["fn"] == "mean":
            code.append(f"Muls(rs{self.slot_of[i]}, rs{self.slot_of[i]}, invN, static_cast<int32_t>(kp));")
        return code + self.brcb(i)

    # ---------------------------------------------------------------------------- kernel
    def _scalar_loads(self, S_ext: list[Ext]) -> list[str]:
        T = self.T
        init: list[str] = []
        if S_ext:
            init.append("pipe.InitBuffer(q_scalar, 1, 32);")
        for e in S_ext:
            init += ["{",
                     f"    LocalTensor<{T}> sl = q_scalar.AllocTensor<{T}>();",
                     f"    DataCopyPad(sl, gm_{e.name}, DataCopyExtParams(1, sizeof({T}), 0, 0, 0), "
                     f"DataCopyPadExtParams<{T}>(true, 0, {self.A - 1}, 0));",
                     "    q_scalar.EnQue(sl);",
                     f"    sl = q_scalar.DeQue<{T}>();",
                     f"    s_{e.name} = static_cast<float>(sl.GetValue(0));",
                     "    q_scalar.FreeTensor(sl);",
                     "}"]
        return init

    def render(self, cls: str, tiling_cls: str) -> tuple[str, Consts]:
        op, T, A = self.op, self.T, self.A
        exts = op.exts
        J_ext = [e for e in exts if e.role == "J"]
        C_ext = [e for e in exts if e.role == "C"]
        R_ext = [e for e in exts if e.role == "R"]
        S_ext = [e for e in exts if e.role == "S"]
        out_j = op.out_kind == "J"
        tile_prelude = [f"uint32_t ccp = {self.pad('cc')};", "bool flat = (kk == 1 || cc == ccp);",
                        "uint32_t nflat = (kk - 1) * ccp + cc;", "uint8_t rs = static_cast<uint8_t>(ccp / 8);",
                        "(void)flat; (void)nflat; (void)rs;"]
        helpers: list[str] = []
        tile: list[str] = []
        copyins: dict[tuple[str, ...], str] = {}

        def copyin(es: list[Ext]) -> str:
            key = tuple(e.name for e in es)
            if key in copyins:
                return copyins[key]
            name = f"CopyIn{len(copyins)}"
            copyins[key] = name
            body = [f"uint32_t ccp = {self.pad('cc')};",
                    "bool dense = (ccp == cc) && (kk == 1 || cc == N);",
                    f"DataCopyPadExtParams<{T}> noPad(false, 0, 0, 0);", "(void)dense;"]
            for e in es:
                v = self.io_var(e)
                body.append(f"LocalTensor<{T}> {v} = q_{e.name}.AllocTensor<{T}>();")
                if e.role == "J":
                    src = f"gm_{e.name}[static_cast<uint64_t>(row0) * N + c0]"
                    body += ["if (dense) {",
                             f"    DataCopy({v}, {src}, kk * cc);",
                             "} else {",
                             f"    DataCopyExtParams p(static_cast<uint16_t>(kk), static_cast<uint32_t>(cc * sizeof({T})), "
                             f"static_cast<uint32_t>((N - cc) * sizeof({T})), 0, 0);",
                             f"    DataCopyPad({v}, {src}, p, noPad);",
                             "}"]
                else:
                    src = f"gm_{e.name}[c0]"
                    body += ["if (ccp == cc) {",
                             f"    DataCopy({v}, {src}, cc);",
                             "} else {",
                             f"    DataCopyExtParams p(1, static_cast<uint32_t>(cc * sizeof({T})), 0, 0, 0);",
                             f"    DataCopyPad({v}, {src}, p, noPad);",
                             "}"]
                body.append(f"q_{e.name}.EnQue({v});")
            helpers.extend([f"__aicore__ inline void {name}(uint32_t row0, uint32_t kk, uint32_t c0, uint32_t cc)",
                            "{"] + _indent(body, 4) + ["}"])
            return name

        def deque(es: list[Ext]) -> list[str]:
            return [f"LocalTensor<{T}> {self.io_var(e)} = q_{e.name}.DeQue<{T}>();" for e in es] + self.casts_in(es)

        def free(es: list[Ext]) -> list[str]:
            return [f"q_{e.name}.FreeTensor({self.io_var(e)});" for e in es]

        # per tile: the per-row inputs
        tile.append(f"uint32_t kp = {self.pad('kk')};")
        for e in R_ext:
            tile += [f"LocalTensor<{T}> lr_{e.name} = q_{e.name}.AllocTensor<{T}>();",
                     f"DataCopyPad(lr_{e.name}, gm_{e.name}[row0], DataCopyExtParams(1, static_cast<uint32_t>(kk * "
                     f"sizeof({T})), 0, 0, 0), DataCopyPadExtParams<{T}>(true, 0, static_cast<uint8_t>(kp - kk), 0));",
                     f"q_{e.name}.EnQue(lr_{e.name});",
                     f"lr_{e.name} = q_{e.name}.DeQue<{T}>();"]
            if self.half:
                tile.append(f"Cast(rs{self.slot_of[e.nid]}, lr_{e.name}, RoundMode::CAST_NONE, static_cast<int32_t>(kp));")
            tile += self.brcb(e.nid)
        out_alloc = [f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();"]
        if self.resident:
            loads = self.loads_for(list(self.nodes))
            ci = copyin(loads)
            tile.append(f"{ci}(row0, kk, 0, N);")
            body = ["uint32_t c0 = 0, cc = N;", "(void)c0;"] + tile_prelude + deque(loads)
            if out_j:
                body += out_alloc
            body += self.block(list(self.nodes), op.out if out_j else None, True)
            if out_j:
                body += self.cast_out() + ["q_out.EnQue(o);"]
            body += free(loads)
            tile += ["{"] + _indent(body, 4) + ["}"]
            if out_j:
                tile.append("CopyOut(row0, kk, 0, N);")
        else:
            for i in self.nodes:
                n = self.g.nodes[i]
                if self.kinds[i] not in ("R", "G"):
                    continue
                if n.op == "reduce":
                    items = self.deps(n.args[0]) + [i]
                    loads = self.loads_for(items)
                    ci = copyin(loads)
                    fn = n.attrs["fn"]
                    tile.append(f"Duplicate(rs{self.slot_of[i]}, {IDENTITY[fn]}, static_cast<int32_t>(kp));")
                    body = tile_prelude + deque(loads) + self.block(items, None, False) + free(loads)
                    tile += ["for (uint32_t c0 = 0; c0 < N; c0 += chunk) {",
                             "    uint32_t cc = N - c0 < chunk ? N - c0 : chunk;",
                             f"    {ci}(row0, kk, c0, cc);",
                             "    {"] + _indent(body, 8) + ["    }", "}"]
                    tile += self.finalize(i)
                else:
                    tile += self.block([i], None, True)
            if out_j:
                items = self.deps(op.out)
                loads = self.loads_for(items)
                ci = copyin(loads)
                body = tile_prelude + deque(loads) + out_alloc
                body += self.block(items, op.out, False) + self.cast_out() + ["q_out.EnQue(o);"] + free(loads)
                tile += ["for (uint32_t c0 = 0; c0 < N; c0 += chunk) {",
                         "    uint32_t cc = N - c0 < chunk ? N - c0 : chunk;",
                         f"    {ci}(row0, kk, c0, cc);",
                         "    {"] + _indent(body, 8) + ["    }",
                                                       "    CopyOut(row0, kk, c0, cc);", "}"]
        out_g = op.out_kind == "G"
        if not out_j and not out_g:
            src = f"rs{self.slot_of[op.out]}"
            conv = (f"Cast(o, {src}, RoundMode::CAST_RINT, static_cast<int32_t>(kp));" if self.half else
                    f"Muls(o, {src}, 1.0f, static_cast<int32_t>(kp));")
            tile += ["{", f"    LocalTensor<{T}> o = q_out.AllocTensor<{T}>();", f"    {conv}",
                     "    q_out.EnQue(o);", "}", "CopyOut(row0, kk, 0, N);"]
        for e in R_ext:
            tile.append(f"q_{e.name}.FreeTensor(lr_{e.name});")

        if out_j:
            co = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                  f"uint32_t ccp = {self.pad('cc')};",
                  "uint64_t at = static_cast<uint64_t>(row0) * N + c0;",
                  "if ((ccp == cc) && (kk == 1 || cc == N)) {",
                  "    DataCopy(gm_out[at], o, kk * cc);",
                  "} else {",
                  f"    DataCopyExtParams p(static_cast<uint16_t>(kk), static_cast<uint32_t>(cc * sizeof({T})), 0, "
                  f"static_cast<uint32_t>((N - cc) * sizeof({T})), 0);",
                  "    DataCopyPad(gm_out[at], o, p);",
                  "}",
                  "q_out.FreeTensor(o);"]
        elif not out_g:
            co = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                  "(void)c0; (void)cc;",
                  f"DataCopyPad(gm_out[row0], o, DataCopyExtParams(1, static_cast<uint32_t>(kk * sizeof({T})), 0, 0, 0));",
                  "q_out.FreeTensor(o);"]
        if not out_g:
            helpers += ["__aicore__ inline void CopyOut(uint32_t row0, uint32_t kk, uint32_t c0, uint32_t cc)",
                        "{"] + _indent(co, 4) + ["}"]

        # UB budget (bytes per element of each buffer kind)
        io, bn = self.io, self.bn
        count_red = bool(op.reduces) and not self.repeat
        c = Consts(align=A)
        c.row_bytes = bn * io * (len(J_ext) + (1 if out_j else 0)) + 4 * self.jpool.size
        c.col_bytes = bn * io * len(C_ext) + 4 * self.cpool.size
        c.slot_bytes = 4 * (self.n_slots + 1) + bn * io * (len(R_ext) + (1 if op.out_kind == "R" else 0))
        if out_g:
            c.slot_bytes += 4  # gwork
        if self.half:
            c.row_bytes += 4 * (len(J_ext) + (1 if out_j else 0))
            c.col_bytes += 4 * len(C_ext)
        c.bcast_bytes = 4 * (len(self.bc_of) + (1 if count_red else 0))
        c.fold_bytes = 4 if (op.reduces and self.repeat) else 0
        c.scalar_bytes = (32 if S_ext else 0) + (64 if out_g else 0)
        c.work = count_red
        c.vecin_buffers = bn * (len(J_ext) + len(C_ext) + len(R_ext)) + (1 if S_ext else 0)

        args = ", ".join(f"GM_ADDR {e.name}" for e in exts) + ", GM_ADDR out"
        init = ["uint32_t blockIdx = GetBlockIdx();",
                "N = t.cols;",
                "tileRows = t.tileRows;",
                "chunk = t.chunk;",
                "kPad = t.kPad;",
                "cPad = t.cPad;",
                "myRows = t.rowsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);",
                "uint64_t firstRow = static_cast<uint64_t>(t.rowsPerBlock) * blockIdx + "
                "(blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);",
                "invN = 1.0f / static_cast<float>(N);"]
        for e in exts:
            if e.role == "J":
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name} + firstRow * N, "
                            "static_cast<uint64_t>(myRows) * N);")
            elif e.role == "C":
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name}, N);")
            elif e.role == "R":
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name} + firstRow, myRows);")
            else:
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name}, 1);")
        if out_j:
            init.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + firstRow * N, static_cast<uint64_t>(myRows) * N);")
        elif out_g:
            init += [f"gm_out.SetGlobalBuffer((__gm__ {T}*)out, 1);",
                     "invTotal = 1.0f / (static_cast<float>(t.rows) * static_cast<float>(N));"]
        else:
            init.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + firstRow, myRows);")
        tile_elems = "tileRows * cPad"
        for e in J_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, {tile_elems} * sizeof({T}));")
        for e in C_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, cPad * sizeof({T}));")
        for e in R_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, kPad * sizeof({T}));")
        if not out_g:
            init.append(f"pipe.InitBuffer(q_out, BUFFER_NUM, {tile_elems if out_j else 'kPad'} * sizeof({T}));")
        queues = J_ext + C_ext + R_ext
        members = ([f"TQue<QuePosition::VECIN, BUFFER_NUM> {', '.join('q_' + e.name for e in queues)};"] if queues else [])
        if not out_g:
            members.append("TQue<QuePosition::VECOUT, BUFFER_NUM> q_out;")
        if S_ext:
            members.append("TQue<QuePosition::VECIN, 1> q_scalar;")
        tbufs: list[str] = []
        locals_: list[str] = []
        get: list[str] = []

        def tbuf(name: str, size: str, var: str | None = None) -> None:
            init.append(f"pipe.InitBuffer(b_{name}, {size});")
            tbufs.append(f"b_{name}")
            if var:
                get.append(f"{var} = b_{name}.Get<float>();")
                locals_.append(var)

        for j in range(self.jpool.size):
            tbuf(f"t{j}", f"{tile_elems} * sizeof(float)", f"t{j}")
        for j in range(self.cpool.size):
            tbuf(f"cb{j}", "cPad * sizeof(float)", f"cb{j}")
        if self.half:
            for e in J_ext:
                tbuf(f"f_{e.name}", f"{tile_elems} * sizeof(float)", f"f_{e.name}")
            for e in C_ext:
                tbuf(f"f_{e.name}", "cPad * sizeof(float)", f"f_{e.name}")
            if out_j:
                tbuf("fo", f"{tile_elems} * sizeof(float)", "fo")
        tbuf("slots", f"{self.n_slots + 1} * kPad * sizeof(float)")
        get.append("LocalTensor<float> slots = b_slots.Get<float>();")
        for j in range(self.n_slots):
            get.append(f"rs{j} = slots[{j} * kPad];")
            locals_.append(f"rs{j}")
        get.append(f"rpart = slots[{self.n_slots} * kPad];")
        locals_.append("rpart")
        if self.bc_of:
            tbuf("bcast", f"{len(self.bc_of)} * 8 * kPad * sizeof(float)")
            get.append("LocalTensor<float> bcast = b_bcast.Get<float>();")
            for j in range(len(self.bc_of)):
                get.append(f"bc{j} = bcast[{j} * 8 * kPad];")
                locals_.append(f"bc{j}")
        if count_red:
            tbuf("blk", "8 * kPad * sizeof(float)", "blk")
            tbuf("work", "((cPad + 63) / 64 + 7) / 8 * 8 * sizeof(float)", "work")
        if c.fold_bytes:
            tbuf("fold", "64 * tileRows * sizeof(float)", "fold")
        if out_g:
            tbuf("gsum", "(16 + kPad) * sizeof(float)")
            get += ["LocalTensor<float> gsum = b_gsum.Get<float>();", "gacc = gsum;", "gpart = gsum[8];",
                    "gwork = gsum[16];", "Duplicate(gacc, 0.0f, 8);"]
            locals_ += ["gacc", "gpart", "gwork"]
        init += get + self._scalar_loads(S_ext)
        process = ["for (uint32_t row0 = 0; row0 < myRows; row0 += tileRows) {",
                   "    uint32_t kk = myRows - row0 < tileRows ? myRows - row0 : tileRows;",
                   "    Tile(row0, kk);",
                   "}"]
        if out_g:  # this block's share of the total: one atomic add into the zero-filled output
            if self.g.nodes[op.out].attrs["fn"] == "mean":
                process.append("Muls(gacc, gacc, invTotal, 1);")
            process += ["{",
                        "    event_t evVM = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));",
                        "    SetFlag<HardEvent::V_MTE3>(evVM);",
                        "    WaitFlag<HardEvent::V_MTE3>(evVM);",
                        "}",
                        "SetAtomicAdd<float>();",
                        "DataCopyPad(gm_out, gacc, DataCopyExtParams(1, sizeof(float), 0, 0, 0));",
                        "SetAtomicNone();"]
        gms = ", ".join(f"gm_{e.name}" for e in exts) + ", gm_out"
        scal = "".join(f", s_{e.name} = 0.0f" for e in S_ext)
        cls_lines = [
            f"class {cls} {{",
            "public:",
            f"    __aicore__ inline {cls}() {{}}",
            f"    __aicore__ inline void Init({args}, const {tiling_cls}& t)",
            "    {"] + _indent(init, 8) + [
            "    }",
            "    __aicore__ inline void Process()",
            "    {"] + _indent(process, 8) + [
            "    }",
            "",
            "private:",
            "    __aicore__ inline void Tile(uint32_t row0, uint32_t kk)",
            "    {"] + _indent(tile, 8) + [
            "    }"] + _indent(helpers, 4) + [
            "",
            "    TPipe pipe;"] + _indent(members, 4) + [
            f"    TBuf<TPosition::VECCALC> {', '.join(tbufs)};",
            f"    GlobalTensor<{T}> {gms};",
            f"    LocalTensor<float> {', '.join(locals_)};",
            "    uint32_t N = 0, tileRows = 0, chunk = 0, kPad = 0, cPad = 0, myRows = 0;",
            f"    float invN = 0.0f, invTotal = 0.0f{scal};",
            "};"]
        return "\n".join(cls_lines), c


class FlatKernel(RowKernel):
    """The ``ascend_elementwise`` family: the tensor as one flat array split over the blocks."""

    def __init__(self, op: AscendOp, knobs: dict[str, Any]):
        super().__init__(op, knobs)
        self.flat_only = True

    def render(self, cls: str, tiling_cls: str) -> tuple[str, Consts]:
        op, T = self.op, self.T
        J_ext = [e for e in op.exts if e.role == "J"]
        S_ext = [e for e in op.exts if e.role == "S"]
        compute = ["uint32_t kk = 1, cc = len, ccp = len, nflat = len;", "(void)kk; (void)cc; (void)ccp;"]
        compute += [f"LocalTensor<{T}> {self.io_var(e)} = q_{e.name}.DeQue<{T}>();" for e in J_ext]
        compute += self.casts_in(J_ext)
        compute.append(f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();")
        compute += self.block(list(self.nodes), op.out, True)
        compute += self.cast_out()
        compute.append("q_out.EnQue(o);")
        compute += [f"q_{e.name}.FreeTensor({self.io_var(e)});" for e in J_ext]
        copyin = [f"DataCopyPadExtParams<{T}> noPad(false, 0, 0, 0);",
                  f"DataCopyExtParams p(1, static_cast<uint32_t>(len * sizeof({T})), 0, 0, 0);",
                  "bool aligned = (len % unitLength == 0);"]
        for e in J_ext:
            v = self.io_var(e)
            copyin += [f"LocalTensor<{T}> {v} = q_{e.name}.AllocTensor<{T}>();",
                       "if (aligned) {",
                       f"    DataCopy({v}, gm_{e.name}[offset], len);",
                       "} else {  // the unaligned tail of the tensor",
                       f"    DataCopyPad({v}, gm_{e.name}[offset], p, noPad);",
                       "}",
                       f"q_{e.name}.EnQue({v});"]
        copyout = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                   "if (len % unitLength == 0) {",
                   "    DataCopy(gm_out[offset], o, len);",
                   "} else {",
                   f"    DataCopyPad(gm_out[offset], o, DataCopyExtParams(1, static_cast<uint32_t>(len * sizeof({T})), "
                   "0, 0, 0));",
                   "}",
                   "q_out.FreeTensor(o);"]
        args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts) + ", GM_ADDR out"
        init = ["uint32_t blockIdx = GetBlockIdx();",
                "uint32_t myUnits = t.unitsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);",
                "uint64_t start = (static_cast<uint64_t>(t.unitsPerBlock) * blockIdx + "
                "(blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks)) * t.unitLength;",
                "uint64_t end = start + static_cast<uint64_t>(myUnits) * t.unitLength;",
                "if (end > t.totalLength) end = t.totalLength;  // the last block ends on the real length",
                "length = end > start ? static_cast<uint32_t>(end - start) : 0;",
                "tileLength = t.tileLength;",
                "unitLength = t.unitLength;"]
        for e in J_ext:
            init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name} + start, length);")
        for e in S_ext:
            init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name}, 1);")
        init.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + start, length);")
        for e in J_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, tileLength * sizeof({T}));")
        init.append(f"pipe.InitBuffer(q_out, BUFFER_NUM, tileLength * sizeof({T}));")
        members = [f"TQue<QuePosition::VECIN, BUFFER_NUM> {', '.join('q_' + e.name for e in J_ext)};",
                   "TQue<QuePosition::VECOUT, BUFFER_NUM> q_out;"]
        if S_ext:
            members.append("TQue<QuePosition::VECIN, 1> q_scalar;")
        fbufs = [f"t{j}" for j in range(self.jpool.size)]
        if self.half:
            fbufs += [f"f_{e.name}" for e in J_ext] + ["fo"]
        for b in fbufs:
            init += [f"pipe.InitBuffer(b_{b}, tileLength * sizeof(float));", f"{b} = b_{b}.Get<float>();"]
        init += self._scalar_loads(S_ext)
        if fbufs:
            members.append(f"TBuf<TPosition::VECCALC> {', '.join('b_' + b for b in fbufs)};")
            members.append(f"LocalTensor<float> {', '.join(fbufs)};")
        process = ["for (uint32_t offset = 0; offset < length; offset += tileLength) {",
                   "    uint32_t len = length - offset < tileLength ? length - offset : tileLength;",
                   "    CopyIn(offset, len);",
                   "    Compute(len);",
                   "    CopyOut(offset, len);",
                   "}"]
        gms = ", ".join(f"gm_{e.name}" for e in op.exts) + ", gm_out"
        scal = "".join(f", s_{e.name} = 0.0f" for e in S_ext)
        lines = [f"class {cls} {{",
                 "public:",
                 f"    __aicore__ inline {cls}() {{}}",
                 f"    __aicore__ inline void Init({args}, const {tiling_cls}& t)",
                 "    {"] + _indent(init, 8) + [
                 "    }",
                 "    __aicore__ inline void Process()",
                 "    {"] + _indent(process, 8) + [
                 "    }",
                 "",
                 "private:",
                 "    __aicore__ inline void CopyIn(uint32_t offset, uint32_t len)",
                 "    {"] + _indent(copyin, 8) + [
                 "    }",
                 "    __aicore__ inline void Compute(uint32_t len)",
                 "    {"] + _indent(compute, 8) + [
                 "    }",
                 "    __aicore__ inline void CopyOut(uint32_t offset, uint32_t len)",
                 "    {"] + _indent(copyout, 8) + [
                 "    }",
                 "",
                 "    TPipe pipe;"] + _indent(members, 4) + [
                 f"    GlobalTensor<{T}> {gms};",
                 "    uint32_t length = 0, tileLength = 0, unitLength = 0;",
                 f"    float unused = 0.0f{scal};",
                 "};"]
        c = Consts(align=self.A)
        c.row_bytes = self.bn * self.io * (len(J_ext) + 1) + 4 * len(fbufs)
        c.scalar_bytes = 32 if S_ext else 0
        c.vecin_buffers = self.bn * len(J_ext) + (1 if S_ext else 0)
        return "\n".join(lines), c


class ColKernel:
    """The ``ascend_colreduce`` family: ``out[a, k] = reduce_m x[a, m, k]``. A unit is one outer index
    and one chunk of columns; a tile holds ``midRows`` middle rows of that chunk. ``vec_form=count``
    adds the tile's rows into the accumulator one by one; ``repeat`` folds them pairwise first (a
    tree of whole-tile instructions, the row padding zero-filled by DataCopyPad)."""

    def __init__(self, op: AscendOp, knobs: dict[str, Any]):
        self.op = op
        self.bn = int(knobs.get("buffer_num", 1))
        self.tree = knobs.get("vec_form", "count") == "repeat"
        self.half = bool(getattr(op.graph, "half", False))
        self.T = "half" if self.half else "float"
        self.A = 16 if self.half else 8
        self.io = 2 if self.half else 4

    def render(self, cls: str, tiling_cls: str) -> tuple[str, Consts]:
        op, T, A = self.op, self.T, self.A
        e = op.exts[0]
        fn = op.graph.nodes[op.out].attrs["fn"]
        comb = COMBINE_OP[fn]
        acc = "facc" if self.half else "o"
        src = "ft" if self.half else "l"
        unit = [f"uint32_t ccp = (cc + {A - 1}) / {A} * {A};",
                f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();",
                f"Duplicate({acc}, {IDENTITY[fn]}, static_cast<int32_t>(cc));",
                "for (uint32_t m0 = 0; m0 < M; m0 += midRows) {",
                "    uint32_t mm = M - m0 < midRows ? M - m0 : midRows;",
                "    CopyIn(a, m0, mm, c0, cc);",
                f"    LocalTensor<{T}> l = q_x.DeQue<{T}>();"]
        if self.half:
            unit.append("    Cast(ft, l, RoundMode::CAST_NONE, static_cast<int32_t>(mm * ccp));")
        if self.tree:
            unit += ["    for (uint32_t w = mm; w > 1;) {  // pairwise: row i takes row i + w - h",
                     "        uint32_t h = w / 2;",
                     f"        {comb}({src}, {src}, {src}[(w - h) * ccp], static_cast<int32_t>(h * ccp));",
                     "        w -= h;",
                     "    }",
                     f"    {comb}({acc}, {acc}, {src}, static_cast<int32_t>(cc));"]
        else:
            unit += ["    for (uint32_t r = 0; r < mm; ++r) {",
                     f"        {comb}({acc}, {acc}, {src}[r * ccp], static_cast<int32_t>(cc));",
                     "    }"]
        unit += ["    q_x.FreeTensor(l);", "}"]
        if fn == "mean":
            unit.append(f"Muls({acc}, {acc}, invM, static_cast<int32_t>(cc));")
        if self.half:
            unit.append("Cast(o, facc, RoundMode::CAST_RINT, static_cast<int32_t>(cc));")
        unit += ["q_out.EnQue(o);", "CopyOut(a, c0, cc);"]
        pad_x = "cc == ccp ? 0 : static_cast<uint8_t>(ccp - cc)"
        copyin = [f"uint32_t ccp = (cc + {A - 1}) / {A} * {A};",
                  f"LocalTensor<{T}> l = q_x.AllocTensor<{T}>();",
                  "uint64_t at = (static_cast<uint64_t>(a) * M + m0) * K + c0;",
                  "if (ccp == cc && cc == K) {",
                  "    DataCopy(l, gm_x[at], mm * cc);",
                  "} else {  // mm rows of cc columns, K apart in GM; each row padded with zeros to 32 bytes",
                  f"    DataCopyExtParams p(static_cast<uint16_t>(mm), static_cast<uint32_t>(cc * sizeof({T})), "
                  f"static_cast<uint32_t>((K - cc) * sizeof({T})), 0, 0);",
                  f"    DataCopyPad(l, gm_x[at], p, DataCopyPadExtParams<{T}>(true, 0, {pad_x}, 0));",
                  "}",
                  "q_x.EnQue(l);"]
        copyout = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                   f"uint32_t ccp = (cc + {A - 1}) / {A} * {A};",
                   "uint64_t at = static_cast<uint64_t>(a) * K + c0;",
                   "if (ccp == cc) {",
                   "    DataCopy(gm_out[at], o, cc);",
                   "} else {",
                   f"    DataCopyPad(gm_out[at], o, DataCopyExtParams(1, static_cast<uint32_t>(cc * sizeof({T})), 0, 0, 0));",
                   "}",
                   "q_out.FreeTensor(o);"]
        init = ["uint32_t blockIdx = GetBlockIdx();",
                "M = t.mid;",
                "K = t.inner;",
                "chunk = t.chunk;",
                "midRows = t.midRows;",
                "colChunks = t.colChunks;",
                "myUnits = t.unitsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);",
                "firstUnit = t.unitsPerBlock * blockIdx + (blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);",
                "invM = 1.0f / static_cast<float>(M);",
                f"gm_x.SetGlobalBuffer((__gm__ {T}*){e.name}, static_cast<uint64_t>(t.outer) * M * K);",
                f"gm_out.SetGlobalBuffer((__gm__ {T}*)out, static_cast<uint64_t>(t.outer) * K);",
                f"pipe.InitBuffer(q_x, BUFFER_NUM, midRows * t.cPad * sizeof({T}));",
                f"pipe.InitBuffer(q_out, BUFFER_NUM, t.cPad * sizeof({T}));"]
        members = ["TQue<QuePosition::VECIN, BUFFER_NUM> q_x;", "TQue<QuePosition::VECOUT, BUFFER_NUM> q_out;",
                   f"GlobalTensor<{T}> gm_x, gm_out;"]
        if self.half:
            init += ["pipe.InitBuffer(b_ft, midRows * t.cPad * sizeof(float));",
                     "pipe.InitBuffer(b_acc, t.cPad * sizeof(float));",
                     "ft = b_ft.Get<float>();", "facc = b_acc.Get<float>();"]
            members += ["TBuf<TPosition::VECCALC> b_ft, b_acc;", "LocalTensor<float> ft, facc;"]
        process = ["for (uint32_t u = 0; u < myUnits; ++u) {",
                   "    uint32_t unit = firstUnit + u;",
                   "    uint32_t a = unit / colChunks;",
                   "    uint32_t c0 = (unit % colChunks) * chunk;",
                   "    uint32_t cc = K - c0 < chunk ? K - c0 : chunk;",
                   "    Unit(a, c0, cc);",
                   "}"]
        lines = [f"class {cls} {{",
                 "public:",
                 f"    __aicore__ inline {cls}() {{}}",
                 f"    __aicore__ inline void Init(GM_ADDR {e.name}, GM_ADDR out, const {tiling_cls}& t)",
                 "    {"] + _indent(init, 8) + [
                 "    }",
                 "    __aicore__ inline void Process()",
                 "    {"] + _indent(process, 8) + [
                 "    }",
                 "",
                 "private:",
                 "    __aicore__ inline void Unit(uint32_t a, uint32_t c0, uint32_t cc)",
                 "    {"] + _indent(unit, 8) + [
                 "    }",
                 "    __aicore__ inline void CopyIn(uint32_t a, uint32_t m0, uint32_t mm, uint32_t c0, uint32_t cc)",
                 "    {"] + _indent(copyin, 8) + [
                 "    }",
                 "    __aicore__ inline void CopyOut(uint32_t a, uint32_t c0, uint32_t cc)",
                 "    {"] + _indent(copyout, 8) + [
                 "    }",
                 "",
                 "    TPipe pipe;"] + _indent(members, 4) + [
                 "    uint32_t M = 0, K = 0, chunk = 0, midRows = 0, colChunks = 0, myUnits = 0, firstUnit = 0;",
                 "    float invM = 0.0f;",
                 "};"]
        c = Consts(align=A)
        c.row_bytes = self.bn * self.io + (4 if self.half else 0)  # per element of a midRows x cPad tile
        c.col_bytes = self.bn * self.io + (4 if self.half else 0)  # per element of the accumulator chunk
        c.vecin_buffers = self.bn
        return "\n".join(lines), c


def _col_geometry(op: AscendOp, knobs: dict[str, Any], c: Consts, cores: int, ub: int) -> dict[str, int] | None:
    assert op.col is not None
    outer, mid, inner = op.col[:3]
    A = c.align
    tile = int(knobs.get("tile", 4096))
    mode = BLOCK_MODES[knobs.get("blocks", "all")]
    if mode == 1:
        cores = max(cores // 2, 1)
    kpad = (inner + A - 1) // A * A
    if kpad <= tile:
        chunk = inner
    else:
        chunk = max(tile // A * A, A)
        pieces = -(-inner // chunk)
        chunk = (-(-inner // pieces) + A - 1) // A * A
    if outer * -(-inner // chunk) < cores:  # too few units for the cores: narrower column chunks
        pieces = max(-(-inner // chunk), min(-(-cores // outer), -(-inner // A)))
        chunk = (-(-inner // pieces) + A - 1) // A * A
    cpad = (chunk + A - 1) // A * A
    rows = max(1, min(mid, tile // cpad, 4095))
    while rows > 1 and c.row_bytes * rows * cpad + c.col_bytes * cpad > ub:
        rows -= 1
    if c.row_bytes * rows * cpad + c.col_bytes * cpad > ub:
        return None
    col_chunks = -(-inner // chunk)
    units = outer * col_chunks
    block_dim = min(cores, units)
    return {"block_dim": block_dim, "chunk": chunk, "mid_rows": rows, "col_chunks": col_chunks,
            "units_per_block": units // block_dim, "big_blocks": units % block_dim,
            "ub_bytes": c.row_bytes * rows * cpad + c.col_bytes * cpad}


def _host_col(op: AscendOp, knobs: dict[str, Any], c: Consts, tiling_cls: str) -> str:
    assert op.col is not None
    outer, mid, inner, d0, d1 = op.col
    if op.frame_ext >= 0:
        shape = ["    const gert::Shape& shape = context->GetInputShape(0)->GetStorageShape();",
                 f"    if (shape.GetDimNum() != {len(op.frame)}) return ge::GRAPH_FAILED;",
                 "    uint64_t outer = 1, mid = 1, inner = 1;",
                 "    for (size_t d = 0; d < shape.GetDimNum(); ++d) {",
                 f"        if (d < {d0}) outer *= shape.GetDim(d);",
                 f"        else if (d <= {d1}) mid *= shape.GetDim(d);",
                 "        else inner *= shape.GetDim(d);",
                 "    }"]
    else:
        shape = [f"    uint64_t outer = {outer}, mid = {mid}, inner = {inner};"]
    return "\n".join([
        "namespace optiling {",
        f"constexpr uint32_t TILE_ELEMS = {int(knobs.get('tile', 4096))};",
        f"constexpr uint32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        f"constexpr uint32_t BLOCK_MODE = {BLOCK_MODES[knobs.get('blocks', 'all')]};  // 0 all cores, 1 half",
        f"constexpr uint32_t ALIGN = {c.align};  // elements per 32-byte block",
        f"constexpr uint64_t TILE_BYTES = {c.row_bytes}, ACC_BYTES = {c.col_bytes};  // UB bytes per element",
        "",
        "static ge::graphStatus TilingFunc(gert::TilingContext* context)",
        "{",
        f"    {tiling_cls} tiling;",
        "    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());",
        "    uint64_t ub = 0;",
        "    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);",
        "    uint32_t coreNum = platform.GetCoreNumAiv();",
        "    if (BLOCK_MODE == 1) coreNum = coreNum / 2 > 0 ? coreNum / 2 : 1;"] + shape + [
        "    if (outer == 0 || mid == 0 || inner == 0) return ge::GRAPH_FAILED;",
        "    uint32_t K = static_cast<uint32_t>(inner);",
        "    uint32_t kPad = (K + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint32_t chunk = K;",
        "    if (kPad > TILE_ELEMS) {  // columns in equal chunks",
        "        chunk = TILE_ELEMS / ALIGN * ALIGN > ALIGN ? TILE_ELEMS / ALIGN * ALIGN : ALIGN;",
        "        uint32_t pieces = (K + chunk - 1) / chunk;",
        "        chunk = ((K + pieces - 1) / pieces + ALIGN - 1) / ALIGN * ALIGN;",
        "    }",
        "    if (outer * ((K + chunk - 1) / chunk) < coreNum) {  // too few units for the cores: narrower chunks",
        "        uint64_t want = (coreNum + outer - 1) / outer;",
        "        uint64_t most = (K + ALIGN - 1) / ALIGN;",
        "        uint64_t pieces = want < most ? want : most;",
        "        if (pieces < (K + chunk - 1) / chunk) pieces = (K + chunk - 1) / chunk;",
        "        chunk = static_cast<uint32_t>(((K + pieces - 1) / pieces + ALIGN - 1) / ALIGN * ALIGN);",
        "    }",
        "    uint32_t cPad = (chunk + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint64_t rows = TILE_ELEMS / cPad;",
        "    if (rows > mid) rows = mid;",
        "    if (rows > 4095) rows = 4095;",
        "    if (rows < 1) rows = 1;",
        "    while (rows > 1 && TILE_BYTES * rows * cPad + ACC_BYTES * cPad > ub) --rows;",
        "    if (TILE_BYTES * rows * cPad + ACC_BYTES * cPad > ub) return ge::GRAPH_FAILED;",
        "    uint32_t colChunks = (K + chunk - 1) / chunk;",
        "    uint32_t units = static_cast<uint32_t>(outer) * colChunks;",
        "    uint32_t blockDim = units < coreNum ? units : coreNum;",
        "    context->SetBlockDim(blockDim);",
        "    tiling.set_outer(static_cast<uint32_t>(outer));",
        "    tiling.set_mid(static_cast<uint32_t>(mid));",
        "    tiling.set_inner(K);",
        "    tiling.set_chunk(chunk);",
        "    tiling.set_cPad(cPad);",
        "    tiling.set_midRows(static_cast<uint32_t>(rows));",
        "    tiling.set_colChunks(colChunks);",
        "    tiling.set_unitsPerBlock(units / blockDim);",
        "    tiling.set_bigBlocks(units % blockDim);",
        "    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
        "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
        "    size_t* workspace = context->GetWorkspaceSizes(1);",
        "    workspace[0] = 0;",
        "    return ge::GRAPH_SUCCESS;",
        "}",
        "}"])


# ------------------------------------------------------------------------------------- geometry

BLOCK_MODES = {"all": 0, "half": 1, "tile": 2}


def _ub_bytes(c: Consts, k: int, cpad: int) -> int:
    kpad = (k + c.align - 1) // c.align * c.align
    work = ((cpad + 63) // 64 + 7) // 8 * 8 if c.work else 0
    return (c.row_bytes * k * cpad + c.col_bytes * cpad + c.slot_bytes * kpad + c.bcast_bytes * 8 * kpad +
            c.fold_bytes * 64 * k + 4 * work + c.scalar_bytes)


def geometry(op: AscendOp, knobs: dict[str, Any], c: Consts, cores: int = CORES, ub: int = UB_BYTES
             ) -> dict[str, int] | None:
    """What the host TilingFunc computes for the task's shapes (None: it would fail)."""
    if c.vecin_buffers > 8:
        return None
    if op.family == "ascend_colreduce":
        return _col_geometry(op, knobs, c, cores, ub)
    A = c.align
    tile = int(knobs.get("tile", 4096))
    mode = BLOCK_MODES[knobs.get("blocks", "all")]
    if mode == 1:
        cores = max(cores // 2, 1)
    if op.family == "ascend_elementwise":
        total = op.rows * op.N
        units = (total + A - 1) // A
        tile_max = (ub - c.scalar_bytes) // c.row_bytes // A * A
        tile_len = min(tile, tile_max)
        if tile_len < A:
            return None
        block_dim = min(units, cores)
        if mode == 2:
            block_dim = min(cores, -(-units // (tile_len // A)))
        return {"block_dim": block_dim, "tile_length": tile_len, "units_per_block": units // block_dim,
                "big_blocks": units % block_dim, "ub_bytes": c.row_bytes * tile_len + c.scalar_bytes}
    resident = knobs.get("row_mode", "stream") == "resident" and bool(op.reduces)
    repeat = knobs.get("vec_form", "count") == "repeat"
    max_chunk = MAX_REPEAT_CHUNK if repeat else 1 << 30
    N, rows = op.N, op.rows
    npad = (N + A - 1) // A * A
    block_dim = min(rows, cores)
    row_cap = rows if mode == 2 else -(-rows // block_dim)
    k = 0
    chunk = N
    if npad <= max_chunk and (npad <= tile or resident):
        r = max(1, tile // npad)
        r = min(r, MAX_TILE_ROWS, row_cap)
        while r > 1 and _ub_bytes(c, r, npad) > ub:
            r -= 1
        if _ub_bytes(c, r, npad) <= ub:
            k = r
    if k == 0:
        if resident:
            return None
        k = 1
        chunk = max(min(tile, max_chunk) // A * A, A)
        while chunk > A and _ub_bytes(c, 1, chunk) > ub:
            chunk -= A
        if _ub_bytes(c, 1, chunk) > ub:
            return None
        pieces = -(-N // chunk)  # equal chunks instead of a short last one
        chunk = (-(-N // pieces) + A - 1) // A * A
    if mode == 2:
        block_dim = min(cores, -(-rows // k))
    return {"block_dim": block_dim, "tile_rows": k, "chunk": chunk, "rows_per_block": rows // block_dim,
            "big_blocks": rows % block_dim, "ub_bytes": _ub_bytes(c, k, (chunk + A - 1) // A * A),
            "passes": (len(op.reduces) + (1 if op.out_kind == "J" else 0)) if not resident else 1}



# ----------------------------------------------------------------------------------------- host


def _host_row(op: AscendOp, knobs: dict[str, Any], c: Consts, tiling_cls: str) -> str:
    resident = knobs.get("row_mode", "stream") == "resident" and bool(op.reduces)
    repeat = knobs.get("vec_form", "count") == "repeat"
    fe = op.exts[op.frame_ext] if op.frame_ext >= 0 else None
    if fe is not None and tuple(op.graph.nodes[fe.root].shape) == tuple(op.frame):
        shape = ["    const gert::Shape& shape = context->GetInputShape(%d)->GetStorageShape();" % op.frame_ext,
                 "    uint32_t cols = static_cast<uint32_t>(shape.GetDim(shape.GetDimNum() - 1));",
                 "    uint32_t rows = cols == 0 ? 0 : static_cast<uint32_t>(shape.GetShapeSize() / cols);"]
    else:
        shape = [f"    uint32_t cols = {op.N};", f"    uint32_t rows = {op.rows};"]
    return "\n".join([
        "namespace optiling {",
        f"constexpr uint32_t TILE_ELEMS = {int(knobs.get('tile', 4096))};",
        f"constexpr uint32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        f"constexpr uint32_t BLOCK_MODE = {BLOCK_MODES[knobs.get('blocks', 'all')]};  // 0 all cores, 1 half, "
        "2 at least one tile per block",
        f"constexpr bool RESIDENT = {'true' if resident else 'false'};  // whole rows stay in UB for every phase",
        f"constexpr uint32_t MAX_CHUNK = {MAX_REPEAT_CHUNK if repeat else 1 << 30};",
        "constexpr uint32_t MAX_TILE_ROWS = 255;",
        f"constexpr uint32_t ALIGN = {c.align};  // elements per 32-byte block",
        "// UB bytes per element of: a tile (rows x chunk), a chunk, a row slot, 8 slots, 64 per tile row; fixed",
        f"constexpr uint64_t ROW_BYTES = {c.row_bytes}, COL_BYTES = {c.col_bytes}, SLOT_BYTES = {c.slot_bytes};",
        f"constexpr uint64_t BCAST_BYTES = {c.bcast_bytes}, FOLD_BYTES = {c.fold_bytes}, "
        f"FIXED_BYTES = {c.scalar_bytes};",
        f"constexpr bool WORK = {'true' if c.work else 'false'};",
        "",
        "static uint64_t UbBytes(uint64_t k, uint64_t cPad)",
        "{",
        "    uint64_t kPad = (k + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint64_t work = WORK ? ((cPad + 63) / 64 + 7) / 8 * 8 : 0;",
        "    return ROW_BYTES * k * cPad + COL_BYTES * cPad + SLOT_BYTES * kPad + BCAST_BYTES * 8 * kPad +",
        "           FOLD_BYTES * 64 * k + 4 * work + FIXED_BYTES;",
        "}",
        "",
        "static ge::graphStatus TilingFunc(gert::TilingContext* context)",
        "{",
        f"    {tiling_cls} tiling;",
        "    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());",
        "    uint64_t ub = 0;",
        "    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);",
        "    uint32_t coreNum = platform.GetCoreNumAiv();",
        "    if (BLOCK_MODE == 1) coreNum = coreNum / 2 > 0 ? coreNum / 2 : 1;"] + shape + [
        "    if (rows == 0 || cols == 0) return ge::GRAPH_FAILED;",
        "    uint32_t blockDim = rows < coreNum ? rows : coreNum;",
        "    uint32_t rowCap = BLOCK_MODE == 2 ? rows : (rows + blockDim - 1) / blockDim;",
        "    uint32_t nPad = (cols + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint32_t k = 0, chunk = cols;",
        "    if (nPad <= MAX_CHUNK && (nPad <= TILE_ELEMS || RESIDENT)) {",
        "        // tiles of whole rows",
        "        uint32_t r = TILE_ELEMS / nPad > 0 ? TILE_ELEMS / nPad : 1;",
        "        if (r > MAX_TILE_ROWS) r = MAX_TILE_ROWS;",
        "        if (r > rowCap) r = rowCap;",
        "        while (r > 1 && UbBytes(r, nPad) > ub) --r;",
        "        if (UbBytes(r, nPad) <= ub) k = r;",
        "    }",
        "    if (k == 0) {",
        "        if (RESIDENT) return ge::GRAPH_FAILED;  // a row does not fit the UB",
        "        // one row at a time, in equal chunks",
        "        k = 1;",
        "        uint32_t target = TILE_ELEMS < MAX_CHUNK ? TILE_ELEMS : MAX_CHUNK;",
        "        chunk = target / ALIGN * ALIGN > ALIGN ? target / ALIGN * ALIGN : ALIGN;",
        "        while (chunk > ALIGN && UbBytes(1, chunk) > ub) chunk -= ALIGN;",
        "        if (UbBytes(1, chunk) > ub) return ge::GRAPH_FAILED;",
        "        uint32_t pieces = (cols + chunk - 1) / chunk;",
        "        chunk = ((cols + pieces - 1) / pieces + ALIGN - 1) / ALIGN * ALIGN;",
        "    }",
        "    if (BLOCK_MODE == 2) {",
        "        uint32_t tiles = (rows + k - 1) / k;",
        "        blockDim = tiles < coreNum ? tiles : coreNum;",
        "    }",
        "    context->SetBlockDim(blockDim);",
        "    tiling.set_rows(rows);",
        "    tiling.set_cols(cols);",
        "    tiling.set_rowsPerBlock(rows / blockDim);",
        "    tiling.set_bigBlocks(rows % blockDim);",
        "    tiling.set_tileRows(k);",
        "    tiling.set_chunk(chunk);",
        "    tiling.set_kPad((k + ALIGN - 1) / ALIGN * ALIGN);",
        "    tiling.set_cPad((chunk + ALIGN - 1) / ALIGN * ALIGN);",
        "    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
        "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
        "    size_t* workspace = context->GetWorkspaceSizes(1);",
        "    workspace[0] = 0;",
        "    return ge::GRAPH_SUCCESS;",
        "}",
        "}"])


def _host_flat(op: AscendOp, knobs: dict[str, Any], c: Consts, tiling_cls: str) -> str:
    return "\n".join([
        "namespace optiling {",
        f"constexpr uint32_t TILE_ELEMS = {int(knobs.get('tile', 4096))};",
        f"constexpr uint32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        f"constexpr uint32_t BLOCK_MODE = {BLOCK_MODES[knobs.get('blocks', 'all')]};  // 0 all cores, 1 half, "
        "2 at least one tile per block",
        f"constexpr uint64_t TILE_BYTES = {c.row_bytes};  // UB bytes per tile element: queues x BUFFER_NUM + "
        "float temporaries",
        f"constexpr uint64_t FIXED_BYTES = {c.scalar_bytes};",
        "",
        "static ge::graphStatus TilingFunc(gert::TilingContext* context)",
        "{",
        f"    {tiling_cls} tiling;",
        "    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());",
        "    uint64_t ub = 0;",
        "    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);",
        "    uint32_t coreNum = platform.GetCoreNumAiv();",
        "    if (BLOCK_MODE == 1) coreNum = coreNum / 2 > 0 ? coreNum / 2 : 1;",
        f"    uint32_t totalLength = static_cast<uint32_t>(context->GetInputShape({op.frame_ext})->GetStorageShape()"
        ".GetShapeSize());",
        "    if (totalLength == 0) return ge::GRAPH_FAILED;",
        f"    uint32_t unit = {c.align};  // elements per 32-byte block",
        "    uint32_t units = (totalLength + unit - 1) / unit;",
        "    uint64_t tileMax = (ub - FIXED_BYTES) / TILE_BYTES / unit * unit;",
        "    uint32_t tileLength = tileMax < TILE_ELEMS ? static_cast<uint32_t>(tileMax) : TILE_ELEMS;",
        "    if (tileLength < unit) return ge::GRAPH_FAILED;",
        "    uint32_t blockDim = units < coreNum ? units : coreNum;",
        "    if (BLOCK_MODE == 2) {",
        "        uint32_t tiles = (units + tileLength / unit - 1) / (tileLength / unit);",
        "        blockDim = tiles < coreNum ? tiles : coreNum;",
        "    }",
        "    context->SetBlockDim(blockDim);",
        "    tiling.set_totalLength(totalLength);",
        "    tiling.set_unitLength(unit);",
        "    tiling.set_unitsPerBlock(units / blockDim);",
        "    tiling.set_bigBlocks(units % blockDim);",
        "    tiling.set_tileLength(tileLength);",
        "    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
        "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
        "    size_t* workspace = context->GetWorkspaceSizes(1);",
        "    workspace[0] = 0;",
        "    return ge::GRAPH_SUCCESS;",
        "}",
        "}"])


def _infer_shape(op: AscendOp) -> list[str]:
    out = list(op.out_shape)
    fe = op.exts[op.frame_ext] if op.frame_ext >= 0 else None
    fshape = list(op.graph.nodes[fe.root].shape) if fe else None
    body = ["namespace ge {", "static ge::graphStatus InferShape(gert::InferShapeContext* context)", "{"]
    if fe is not None and out == fshape:
        body.append(f"    *context->GetOutputShape(0) = *context->GetInputShape({op.frame_ext});")
    elif fe is not None and fshape and out == fshape[:-1] + [1]:
        body += [f"    *context->GetOutputShape(0) = *context->GetInputShape({op.frame_ext});",
                 "    gert::Shape* y = context->GetOutputShape(0);",
                 "    y->SetDim(y->GetDimNum() - 1, 1);"]
    elif fe is not None and fshape and out == fshape[:-1]:
        body += [f"    *context->GetOutputShape(0) = *context->GetInputShape({op.frame_ext});",
                 "    gert::Shape* y = context->GetOutputShape(0);",
                 "    y->SetDimNum(y->GetDimNum() - 1);"]
    else:
        body += ["    gert::Shape* y = context->GetOutputShape(0);", f"    y->SetDimNum({len(out)});"]
        body += [f"    y->SetDim({d}, {v});" for d, v in enumerate(out)]
    body += ["    return GRAPH_SUCCESS;", "}", "}"]
    return body


def _opdef(op: AscendOp) -> list[str]:
    dt = "ge::DT_FLOAT16" if getattr(op.graph, "half", False) else "ge::DT_FLOAT"
    lines = ["namespace ops {", f"class {op.op_type} : public OpDef {{", "public:",
             f"    explicit {op.op_type}(const char* name) : OpDef(name)", "    {"]
    for e in op.exts:
        lines.append(f'        this->Input("{e.name}").ParamType(REQUIRED).DataType({{{dt}}})'
                     ".Format({ge::FORMAT_ND});")
    lines += [f'        this->Output("out").ParamType(REQUIRED).DataType({{{dt}}}).Format({{ge::FORMAT_ND}});',
              "        this->SetInferShape(ge::InferShape);",
              "        this->AICore().SetTiling(optiling::TilingFunc);",
              '        this->AICore().AddConfig("ascend910b");',
              "    }", "};", f"OP_ADD({op.op_type});", "}"]
    return lines


# ----------------------------------------------------------------------------------- candidate


def render_project(op: AscendOp, knobs: dict[str, Any]) -> tuple[dict[str, str], Consts, dict[str, int] | None]:
    """The six strings of the operator project, the buffer counts and the host's geometry."""
    if op.family == "ascend_cube":
        from evokernel.generators.template import ascend_cube

        return ascend_cube.render_project(op, knobs)  # type: ignore[arg-type,return-value]
    if op.family == "ascend_conv":
        from evokernel.generators.template import ascend_conv

        return ascend_conv.render_project(op, knobs)  # type: ignore[arg-type,return-value]
    tiling_cls = f"{op.op_type}TilingData"
    cls = f"Kernel{op.op_type}"
    writer: Any
    if op.family == "ascend_colreduce":
        writer = ColKernel(op, knobs)
    elif op.family == "ascend_elementwise":
        writer = FlatKernel(op, knobs)
    else:
        writer = RowKernel(op, knobs)
    kclass, consts = writer.render(cls, tiling_cls)
    geo = geometry(op, knobs, consts)
    args = ", ".join(e.name for e in op.exts)
    gm_args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts)
    kernel = "\n".join([
        '#include "kernel_operator.h"',
        "using namespace AscendC;",
        "",
        f"constexpr int32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        "",
        kclass,
        "",
        f'extern "C" __global__ __aicore__ void {op.kernel_name}({gm_args}, GM_ADDR out, GM_ADDR workspace, '
        "GM_ADDR tiling)",
        "{",
        "    GET_TILING_DATA(tiling_data, tiling);",
        f"    {cls} op;",
        f"    op.Init({args}, out, tiling_data);",
        "    op.Process();",
        "}"])
    if op.family == "ascend_colreduce":
        fields = [("outer", "dims before the reduced ones"), ("mid", "the reduced dims"), ("inner", "dims after"),
                  ("chunk", "columns per unit"), ("cPad", "chunk rounded up to 32 bytes"),
                  ("midRows", "reduced rows per tile"), ("colChunks", ""), ("unitsPerBlock", ""),
                  ("bigBlocks", "the first bigBlocks blocks take one unit more")]
        host_core = _host_col(op, knobs, consts, tiling_cls)
    elif op.family == "ascend_elementwise":
        fields = [("totalLength", ""), ("unitLength", "elements per 32-byte unit"), ("unitsPerBlock", ""),
                  ("bigBlocks", "the first bigBlocks blocks take one unit more"), ("tileLength", "elements per tile")]
        host_core = _host_flat(op, knobs, consts, tiling_cls)
    else:
        fields = [("rows", ""), ("cols", "the last dimension"), ("rowsPerBlock", ""),
                  ("bigBlocks", "the first bigBlocks blocks take one row more"), ("tileRows", "rows per tile"),
                  ("chunk", "columns per tile (cols unless a row is longer than a tile)"),
                  ("kPad", "tileRows rounded up to 8"), ("cPad", "chunk rounded up to 8")]
        host_core = _host_row(op, knobs, consts, tiling_cls)
    tiling = "\n".join(['#include "register/tilingdata_base.h"', "", "namespace optiling {",
                        f"BEGIN_TILING_DATA_DEF({tiling_cls})"] +
                       [f"  TILING_DATA_FIELD_DEF(uint32_t, {f});" + (f"  // {c}" if c else "") for f, c in fields] +
                       ["END_TILING_DATA_DEF;", "", f"REGISTER_TILING_DATA_CLASS({op.op_type}, {tiling_cls})", "}"])
    host = "\n".join([f'#include "{op.kernel_name}_tiling.h"', '#include "register/op_def_registry.h"',
                      '#include "tiling/platform/platform_ascendc.h"', "", host_core, ""] + _infer_shape(op) + [""] +
                     _opdef(op))
    import json as _json
    ty = "float16" if getattr(op.graph, "half", False) else "float"
    desc = [{"op": op.op_type, "language": "cpp",
             "input_desc": [{"name": e.name, "param_type": "required", "format": ["ND"], "type": [ty]}
                            for e in op.exts],
             "output_desc": [{"name": "out", "param_type": "required", "format": ["ND"], "type": [ty]}]}]
    project_json = _json.dumps(desc, indent=4)
    # binding
    fe = op.exts[op.frame_ext] if op.frame_ext >= 0 else None
    first = op.exts[0].name
    if op.out_kind == "G":  # blocks add their partial sums into it
        alloc = f"at::Tensor result = at::zeros({{{', '.join(str(d) for d in op.out_shape)}}}, {first}.options());"
    elif fe is not None and list(op.out_shape) == list(op.graph.nodes[fe.root].shape):
        alloc = f"at::Tensor result = at::empty_like({fe.name});"
    else:
        alloc = f"at::Tensor result = at::empty({{{', '.join(str(d) for d in op.out_shape)}}}, {first}.options());"
    params = ", ".join(f"const at::Tensor& {e.name}" for e in op.exts)
    bind = binding_source(op.kernel_name, op.op_type, params, alloc, args, f"{op.op_class} ({op.family})")
    model = model_source(op.init_source, op.graph.input_names, op.kernel_name,
                         ", ".join(e.pyexpr for e in op.exts))
    parts = {"project_json_src": project_json, "host_tiling_src": tiling, "host_operator_src": host,
             "kernel_src": kernel, "python_bind_src": bind, "model_src": model}
    return parts, consts, geo


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
