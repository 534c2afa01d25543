"""The operator a vector-core task becomes (``AscendOp``), shared by the vector families and the cube's row
programs: a ``row`` stage classified against the frame ``(rows, N)`` -- which values vary along rows and columns
(J), per row (R), per column (C), one value (S) -- and its family (``ascend_elementwise`` when it is a flat
chain, else ``ascend_row``; the ``ascend_colreduce`` family builds its own). The vector cores' limits live here too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evokernel.generators.template.ascend.names import _ident, _pascal, _prod, _snake, own_init
from evokernel.generators.template.front.graph import AnalysisError, Graph
from evokernel.generators.template.front.lower import Plan, Stage
from evokernel.generators.template.front.graph import attr_expr

CORES = 40  # GetCoreNumAiv() of the emulated 910B
UB_BYTES = 196608
MAX_REPEAT_CHUNK = 2040  # repeat strides are uint8 counts of 32-byte blocks: rows up to 255 * 8 floats
MAX_TILE_ROWS = 255  # repeat counts are uint8
BLOCK_MODES = {"all": 0, "half": 1, "tile": 2}  # the blocks knob: every vector core, half of them, or by tile


def vector_cores(knobs: dict[str, Any], cores: int) -> tuple[int, int]:
    """(the ``blocks`` knob's mode, the vector cores a kernel takes: half of them in mode 1)."""
    mode = BLOCK_MODES[knobs.get("blocks", "all")]
    return mode, (max(cores // 2, 1) if mode == 1 else cores)

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


def prepare(plan: Plan, task_name: str, task_source: str = "") -> AscendOp:
    """A plan of one ``row`` stage as one vector operator, its values classified (AnalysisError naming what the
    vector templates cannot write)."""
    g = plan.graph
    st = plan.stages[0]
    root_of = lambda nid: plan.aliases.get(nid, nid)  # noqa: E731
    if root_of(g.output) != st.out:
        raise AnalysisError("the output is not produced by the kernel")
    frame, rows, N = _frame(g, st)
    kinds: dict[int, str] = {}
    exts = _operands(g, st, frame, root_of, kinds)
    reduces = _classify(g, st, frame, kinds)
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
    op_class = _op_class(g, st, kinds, reduces, out_kind, flat)
    init_source = g.init_source if (not task_source or own_init(task_source)) else ""
    return AscendOp(g, list(st.nodes), kinds, exts, out, out_kind, out_shape, frame, rows, N, family, op_class,
                    _snake(task_name), frame_ext, reduces, init_source)


def _frame(g: Graph, st: Stage) -> tuple[tuple[int, ...], int, int]:
    """The stage's frame (its largest shape), its rows and its row length N."""
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
    return frame, rows, N


def _role(shape: tuple[int, ...], frame: tuple[int, ...], what: str) -> str:
    """J (the frame), R (per row), C (per column) or S (one value): how ``shape`` broadcasts to the frame."""
    L = len(frame) - 1
    N = frame[-1]
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


def _operands(g: Graph, st: Stage, frame: tuple[int, ...], root_of: Any, kinds: dict[int, str]) -> list[Ext]:
    """The stage's external reads as kernel operands (float32 inputs and parameters, unique C names), forward
    inputs first by position, then parameters; their roles go into ``kinds``."""
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
        role = _role(node.shape, frame, f"operand {node.origin}")
        kinds[e] = role
        if rnode.op == "input":
            name = fresh(rnode.attrs["name"])
            pyexpr = rnode.attrs["name"]
        else:
            name = fresh(rnode.attrs["path"].replace(".", "_"))
            pyexpr = attr_expr("self", rnode.attrs["path"])
        exts.append(Ext(e, root, name, role, pyexpr, tuple(node.shape)))
    # order: forward inputs first (by position), then parameters
    exts.sort(key=lambda x: (g.nodes[x.root].op != "input", g.nodes[x.root].attrs.get("index", 0), x.root))
    return exts


def _classify(g: Graph, st: Stage, frame: tuple[int, ...], kinds: dict[int, str]) -> list[int]:
    """Each node's kind (J, R, C, S, or G for a whole-tensor sum/mean ending the kernel) into ``kinds``; the
    reductions in order."""
    N = int(frame[-1])
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
    return reduces


def _op_class(g: Graph, st: Stage, kinds: dict[int, str], reduces: list[int], out_kind: str, flat: bool) -> str:
    """What the operator computes, in words the summary and the binding show."""
    fns = {g.nodes[i].attrs.get("fn") for i in st.nodes}
    r_unary = {g.nodes[i].attrs.get("fn") for i in st.nodes if kinds[i] == "R" and g.nodes[i].op == "unary"}
    if flat:
        return "elementwise"
    if out_kind == "G":
        return "full-reduction"
    if out_kind == "R":
        return "reduction"
    if "amax" in fns and "exp" in fns:
        return "softmax"
    if reduces and r_unary & {"sqrt", "rsqrt"}:
        return "normalization"
    if reduces:
        return "row-reduction-fusion"
    return "broadcast-elementwise"
