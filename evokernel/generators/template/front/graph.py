"""The front end's IR: what the task analysis produces and every back end reads.

The IR (:class:`Graph` of :class:`Node`) has

* leaves: ``input`` (a forward argument), ``param`` (a parameter/buffer reached by attribute path),
* elementwise ops: ``unary`` (attrs ``fn`` and its constants) and ``binary`` (``fn`` in add/sub/mul/div/
  max/min/pow); an argument is a node id (int) or a Python float constant wrapped in :class:`Const`,
* ``reduce`` (``fn`` in sum/mean/amax/amin, ``dims`` or ``None`` for all, always keepdim; a
  ``reshape`` node follows when the reference drops the dimension),
* ``gather_last`` (``x[r, t[r]]``), anchors ``gemm``, ``conv2d``, ``pool2d``, ``cumsum``,
  ``group_norm`` and the view op ``reshape``.

How a task becomes one: :mod:`.trace` (running and tracing the reference) and :mod:`.normalise` (the fx graph
normalised into these primitives).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class AnalysisError(ValueError):
    """The task cannot be analysed (untraceable, unsupported op, unsupported layout)."""


@dataclass(frozen=True)
class Const:
    value: float


class Ref(int):
    """A node id (an int that is known to refer to a node, unlike a literal dim or size)."""


@dataclass
class Node:
    id: int
    op: str
    args: list[Any]
    attrs: dict[str, Any]
    shape: tuple[int, ...]
    dtype: str = "f32"  # f32 or i64
    origin: str = ""  # the FX node this came from (for messages)


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output: int = -1
    init_source: str = ""  # the reference Model.__init__ (rewritten for the candidate)
    init_params: list[str] = field(default_factory=list)
    half: bool = False  # analysed with allow_half: the inputs, parameters and output are float16

    def add(self, op: str, args: list[Any], attrs: dict[str, Any] | None, shape: tuple[int, ...],
            dtype: str = "f32", origin: str = "") -> int:
        n = Node(len(self.nodes), op, list(args), dict(attrs or {}), tuple(int(s) for s in shape), dtype, origin)
        self.nodes.append(n)
        return Ref(n.id)

    def users(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for a in n.args:
                if isinstance(a, int):
                    out[a].append(n.id)
        return out

    def ops(self) -> list[str]:
        return [n.op if n.op not in ("unary", "binary", "reduce") else f"{n.op}:{n.attrs.get('fn')}"
                for n in self.nodes]


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise AnalysisError(f"shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def attr_expr(base: str, path: str) -> str:
    """Python for the attribute at ``path`` (``network.0.weight``) of ``base`` (``self``): a dotted path written
    as is, a numeric part (an ``nn.Sequential`` / ``nn.ModuleList`` index) as a subscript
    (``self.network[0].weight``), any other part that is not an identifier (a ``ModuleDict`` key) through
    ``getattr``. Written as ``self.`` + path, a multi-layer model's candidate would not be Python at all."""
    import keyword  # lazy: only where a path part is not an identifier (rare)

    expr = base
    for part in path.split("."):
        if part.isidentifier() and not keyword.iskeyword(part):
            expr += f".{part}"
        elif part.isdigit():
            expr += f"[{int(part)}]"
        else:
            expr = f"getattr({expr}, {part!r})"
    return expr
