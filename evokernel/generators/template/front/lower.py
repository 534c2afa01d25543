"""Stage building: cut the normalised IR into kernels ("stages"), each one native function.

* an anchor op (gemm, conv2d, convnd, pool2d, poolnd, cumsum, group_norm, batch_norm) starts a stage of its own and absorbs the
  chain of elementwise ops that follows it (its *epilogue*), as long as each op has a single user,
  keeps the anchor's output shape and reads only tensors that are already materialised;
* runs of elementwise ops and reductions form a *region*: a row program over a frame
  ``(rows, N)`` (family ``row``), or a reduction over a middle dimension (family ``midreduce``);
* ``reshape`` is a view of a materialised tensor (no stage); ``transpose`` is only legal as the
  right operand of a gemm (read transposed while packing);
* ``cat`` of materialised tensors, ``permute_copy`` (a transpose/permute of other dims than the last two) and
  ``slice_copy`` (basic indexing, ``out[:, -1, :]``) are copy kernels of their own (family ``layout``);
* ``rnn`` (an nn.LSTM / nn.GRU / nn.RNN call, one output of it) is one kernel of family ``rnn``;
* nodes the output does not depend on are dropped (``out, h_n = gru(x); y = fc(out[:, -1]); return h_n``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from evokernel.generators.template.front.graph import AnalysisError, Const, Graph, Node

ANCHORS = {"gemm", "conv2d", "convnd", "pool2d", "poolnd", "cumsum", "group_norm", "batch_norm", "transpose_copy",
           "trimask", "argreduce", "cat", "permute_copy", "slice_copy", "rnn"}
EPILOGUE_OK = {"gemm", "conv2d", "convnd", "group_norm", "batch_norm", "pool2d", "poolnd"}
ELEMENTWISE = {"unary", "binary"}
REGION_OPS = {"unary", "binary", "reduce", "gather_last"}

# the family of each stage kind; the candidate's primary family is the costliest present
FAMILY_RANK = ["rnn", "gemm", "conv", "gemv", "groupnorm", "row", "scan", "midreduce", "pool", "layout"]


@dataclass
class Stage:
    family: str  # row, gemm, gemv, conv, pool, scan, midreduce, groupnorm, layout, rnn
    anchor: int | None  # the anchor node (None for a region)
    nodes: list[int]  # region nodes, or the epilogue chain after the anchor
    out: int  # the node this stage materialises
    externals: list[int] = field(default_factory=list)  # materialised tensors read (in call order)


@dataclass
class Plan:
    graph: Graph
    stages: list[Stage]
    aliases: dict[int, int]  # reshape node -> the node it views

    @property
    def families(self) -> list[str]:
        seen: list[str] = []
        for s in self.stages:
            if s.family not in seen:
                seen.append(s.family)
        return seen

    @property
    def primary(self) -> str:
        fams = self.families
        return min(fams, key=lambda f: FAMILY_RANK.index(f) if f in FAMILY_RANK else 99)


def build_plan(g: Graph) -> Plan:
    """The stage plan of ``g``: anchors with their epilogue chains, fused regions, views (AnalysisError naming the node
    no kernel family takes)."""
    return _Planner(g).plan()


class _Planner:
    """One walk over the IR's nodes in order: anchors absorb the elementwise chain after them (an epilogue), runs of
    elementwise ops and reductions collect in a region that becomes a ``row`` (or ``midreduce``) stage when a
    boundary closes it, reshapes are views of materialised tensors."""

    def __init__(self, g: Graph):
        self.g = g
        self.live = self._live()
        self.users = {i: [u for u in us if u in self.live] for i, us in g.users().items()}
        self.mat: set[int] = {n.id for n in g.nodes if n.op in ("input", "param")}
        self.stages: list[Stage] = []
        self.aliases: dict[int, int] = {}
        self.done: set[int] = set()
        self.region: list[int] = []

    def fail(self, node: Node, why: str) -> AnalysisError:
        return AnalysisError(f"cannot build a kernel for node {node.origin or node.id} ({node.op}): {why}")

    def plan(self) -> Plan:
        g, mat = self.g, self.mat
        for node in g.nodes:
            if node.id not in self.live:
                continue  # dead code (``out, h_n = lstm(x); y = fc(out[:, -1]); return h_n``) is not computed
            if node.op in ("input", "param") or node.id in self.done or self.consumed(node):
                continue
            if node.op == "reshape":
                self.close_region()
                src = node.args[0]
                if src not in mat:
                    raise self.fail(node, "reshape of an intermediate")
                self.aliases[node.id] = self.aliases.get(src, src)
                mat.add(node.id)
            elif node.op in ANCHORS:
                self.close_region()
                self.anchor(node)
            elif node.op in REGION_OPS:
                self.region_op(node)
            else:
                raise self.fail(node, "no kernel family for this op")
        self.close_region()
        if g.output not in mat:
            raise AnalysisError("the graph output is not produced by any kernel")
        return Plan(g, self.stages, self.aliases)

    def _live(self) -> set[int]:
        """The nodes the output depends on."""
        g = self.g
        seen: set[int] = set()
        todo = [g.output] if g.output >= 0 else []
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            todo += [a for a in g.nodes[i].args if isinstance(a, int) and a not in seen]
        return seen

    def consumed(self, node: Node) -> bool:
        """A view or flip that a later node takes over (a matmul's transposed operand, a reverse cumsum's flips);
        raises when nothing does."""
        g, users = self.g, self.users
        if node.op == "transpose":
            if users[node.id]:
                # read by other than a matmul (which folds it into its operand): materialised by a transpose kernel
                # (NetVLAD's ``vlad.transpose(1, 2) - a``)
                if g.nodes[node.args[0]].dtype != "f32":
                    raise self.fail(node, "a transposed view of other than a float tensor")
                node.op = "transpose_copy"
                return False
            return True
        if node.op == "flip":
            if not users[node.id]:
                return True  # consumed by a reverse-cumsum rewrite
            raise self.fail(node, "flip (other than in cumsum(x.flip(d), d).flip(d))")
        if node.op == "cumsum" and node.attrs.get("flipped_out"):
            if any(g.nodes[u].op == "cumsum" and g.nodes[u].args == node.args for u in range(node.id + 1, len(g.nodes))):
                return True  # superseded by the reverse-cumsum node built from the trailing flip
            raise self.fail(node, "cumsum of a flipped tensor without the trailing flip")
        return False

    def anchor(self, node: Node) -> None:
        """An anchor's stage: its family, and the elementwise chain after it as its epilogue."""
        g, users, mat = self.g, self.users, self.mat
        for a in node.args:
            if isinstance(a, int) and a not in mat:
                raise self.fail(node, f"reads {g.nodes[a].origin}, an intermediate of another kernel")
        family = {"gemm": "gemm", "conv2d": "conv", "convnd": "conv", "pool2d": "pool", "poolnd": "pool",
                  "cumsum": "scan", "group_norm": "groupnorm", "batch_norm": "groupnorm", "transpose_copy": "layout",
                  "trimask": "layout", "argreduce": "midreduce", "cat": "layout",
                  "permute_copy": "layout", "slice_copy": "layout", "rnn": "rnn"}[node.op]
        if node.op == "gemm" and node.attrs["n"] == 1:
            family = "gemv"
        chain: list[int] = []
        cur = node.id
        # (an anchor whose rows have length 1 -- a global pool -- keeps its elementwise ops in a region)
        while node.op in EPILOGUE_OK and node.shape[-1:] != (1,) and cur != g.output and len(users[cur]) == 1:
            u = g.nodes[users[cur][0]]
            if u.op not in ELEMENTWISE or u.shape != node.shape:
                break
            others = [a for a in u.args if isinstance(a, int) and a != cur]
            if any(a not in mat for a in others):
                break
            chain.append(u.id)
            self.done.add(u.id)
            cur = u.id
        ext = [a for a in node.args if isinstance(a, int)]
        for i in chain:
            for a in g.nodes[i].args:
                if isinstance(a, int) and a != node.id and a not in chain and a not in ext:
                    ext.append(a)
        self.stages.append(Stage(family, node.id, chain, cur, ext))
        mat.add(cur)

    def region_op(self, node: Node) -> None:
        """An elementwise op or reduction joins the open region; a reduction over a middle dim is a stage of its
        own, and a full reduction read by more region ops ends its kernel."""
        g, region = self.g, self.region
        if node.op == "reduce" and region:
            d = node.attrs["dims"]
            src = g.nodes[node.args[0]]
            if d is not None and d != [len(src.shape) - 1]:
                self.close_region()
        region.append(node.id)
        if node.op == "reduce" and node.attrs["dims"] is None and any(
                g.nodes[u].op in REGION_OPS for u in self.users[node.id]):
            self.close_region()  # a full reduction ends its kernel; what reads it is the next one (x / ||x||)
            return
        if node.op == "reduce" and node.attrs["dims"] is not None:
            src = g.nodes[node.args[0]]
            if node.attrs["dims"] != [len(src.shape) - 1]:
                self.close_region()

    def close_region(self) -> None:
        g, users, mat, region = self.g, self.users, self.mat, self.region
        if not region:
            return
        inside = set(region)
        outs = [i for i in region if i == g.output or any(u not in inside for u in users[i])]
        if outs and outs[0] != region[-1]:
            # a value read after the region as well as inside it (NetVLAD: ``v = x - a`` read by the squares a
            # middle-dim norm sums and by ``v / norm``): the region up to it is a kernel of its own, then the rest
            k = region.index(outs[0])
            rest = region[k + 1:]
            self.region = region[:k + 1]
            self.close_region()
            self.region = rest
            self.close_region()
            self.region = region
            region.clear()
            return
        if len(outs) != 1:
            raise self.fail(g.nodes[region[-1]], "a fused region whose result nothing reads")
        ext: list[int] = []
        for i in region:
            for a in g.nodes[i].args:
                if isinstance(a, int) and a not in inside and a not in ext:
                    if a not in mat:
                        raise self.fail(g.nodes[i], f"reads {g.nodes[a].origin}, an intermediate of another kernel")
                    ext.append(a)
        reds = [g.nodes[i] for i in region if g.nodes[i].op == "reduce"]
        family = "row"
        if len(region) == 1 and reds:
            r = reds[0]
            src = g.nodes[r.args[0]]
            dims = r.attrs["dims"]
            if dims is not None and dims != [len(src.shape) - 1]:
                family = "midreduce"
                if len(dims) != 1:
                    # contiguous runs of reduced dims can be folded into one
                    if dims != list(range(dims[0], dims[-1] + 1)):
                        raise self.fail(r, f"reduction over non-adjacent dims {dims}")
        self.stages.append(Stage(family, None, list(region), region[-1], ext))
        mat.add(region[-1])
        region.clear()


def const_value(a: object) -> float | None:
    return a.value if isinstance(a, Const) else None
