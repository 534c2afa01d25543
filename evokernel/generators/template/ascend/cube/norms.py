"""GroupNorm and training-mode BatchNorm after a matmul on the cube unit (the ``ascend_cube`` family).

The plan cuts a ``group_norm``/``batch_norm`` node into a stage of its own; after a gemm the cube template
instead joins everything that follows the matmul into one region and rewrites the graph so that the vector
cores' row program (``ascend/cube/rows.py``, the ascend_row RowKernel) can run it:

* GroupNorm (``groups`` G over the N output features, S = N / G per group): every node of the region of the
  matmul's shape ``(M, N)`` becomes ``(M, S)``, the norm becomes the LayerNorm expansion over the last dim
  (mean, biased variance, ``rsqrt(var + eps)``, then the affine weight and bias per column), per-column
  operands ``(N,)`` become ``(S,)`` views, full-tensor operands ``(M, N)`` become ``(M, S)``. The vector
  cores then run that row program once per group, on the group's columns of C (rows of S values at a row
  stride of N) with the per-column operands offset by ``g * S`` (``ROW_GROUPS`` in the kernel).
  Refused by name: a reduction over the output features next to the norm (it would need every group),
  operands of other shapes, an output that is not the matmul's shape.
* BatchNorm with batch statistics (a ``BatchNorm1d`` of a model that is not in eval mode, as the verifier
  constructs it): the statistics are per column over all M rows, so they need C whole. The norm becomes
  ``(y - bn_mean) * bn_rstd * weight + bias`` where ``bn_mean``/``bn_rstd`` are per-column tensors the vector
  cores compute first, column slices over all M rows (``ascend/cube/cols.py``, two passes: the mean, then
  the biased variance of ``y - mean``), written after C in the workspace; a SyncAll later the row program
  runs as for any other epilogue. ``y`` is the elementwise chain between the matmul and the norm (it is
  evaluated by both phases). The running statistics the module updates are not outputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evokernel.generators.template.front.graph import AnalysisError, Const, Graph, Node, Ref
from evokernel.generators.template.front.lower import Plan, Stage

NORM_OPS = ("group_norm", "batch_norm")
BN_MEAN, BN_RSTD = "bn_mean", "bn_rstd"  # the row program's names for the per-column batch statistics


@dataclass
class BatchNormInfo:
    """What the column-statistics phase needs (node ids in the rewritten graph)."""

    src: int  # the norm's input: the matmul's output or the end of the chain before the norm
    pre: list[int]  # the elementwise chain from the matmul's output to src (in order)
    eps: float
    mean_id: int = -1  # the rewritten graph's input nodes of the two statistics
    rstd_id: int = -1


@dataclass
class NormInfo:
    groups: int = 1  # GroupNorm: the row program runs once per group of N / groups columns
    bn: BatchNormInfo | None = None
    internal: list[int] = field(default_factory=list)  # input nodes the kernel computes (not operands)


def check_rest(plan: Plan) -> None:
    """The refusal of what follows the gemm stage when it is more than one row region, or row regions around
    one GroupNorm/BatchNorm or pooling stage."""
    rest = plan.stages[1:]
    special = [s for s in rest if s.family in ("groupnorm", "pool")]  # ascend/cube/pool.py for the pooling
    ok = all(s.family in ("row", "groupnorm", "pool") for s in rest) and len(special) <= 1 and (special or len(rest) <= 1)
    if not ok:
        fams = " -> ".join(s.family for s in plan.stages)
        raise AnalysisError(f"the task needs {len(plan.stages)} kernels ({fams}): after the matmul the cube "
                            "template writes one row program (elementwise, row reductions and normalisations, "
                            "one GroupNorm, training-mode BatchNorm or pooling along the features)")


def rest_nodes(stages: list[Stage]) -> list[int]:
    """The nodes of the stages after the gemm, in order (an anchor before its chain)."""
    out: list[int] = []
    for s in stages:
        out += ([s.anchor] if s.anchor is not None else []) + list(s.nodes)
    return out


def rewrite(plan: Plan, cut: int, region: list[int]) -> tuple[Plan, int, list[int], NormInfo | None]:
    """The plan's graph rebuilt with the region's GroupNorm or BatchNorm expanded (module docstring); the
    plan, ``cut`` and ``region`` unchanged (and None) when there is none."""
    g = plan.graph
    norms = [i for i in region if g.nodes[i].op in NORM_OPS]
    if not norms:
        return plan, cut, region, None
    if len(norms) > 1:
        raise AnalysisError("after the matmul: two normalisations over groups or the batch (one is templated)")
    nid = norms[0]
    norm = g.nodes[nid]
    c = g.nodes[cut]
    if len(c.shape) != 2 or tuple(norm.shape) != tuple(c.shape):
        raise AnalysisError(f"{norm.origin}: a {norm.op} of a tensor of shape {norm.shape}, not the matmul's output "
                            f"{tuple(c.shape)}")
    M, N, groups = _check(plan, cut, region, nid)
    g2 = _regrouped(plan, cut, region, M, N, groups)
    info = NormInfo(groups=groups)
    exp: list[int] = []
    y = _expand(g2, nid, norm, region, N, info, exp)
    for n in g2.nodes[:len(g.nodes)]:
        n.args = [Ref(y) if (isinstance(a, int) and a == nid) else a for a in n.args]
    if g.output == nid:
        g2.output = Ref(y)
    k = region.index(nid)
    region2 = list(region[:k]) + exp + list(region[k + 1:])
    if info.bn is not None:
        _check_bn_chain(g2, cut, info.bn)
    return Plan(g2, [], dict(plan.aliases)), cut, region2, info


def _check(plan: Plan, cut: int, region: list[int], nid: int) -> tuple[int, int, int]:
    """(M, N, groups) of a norm the row program can run, or AnalysisError naming what is not templated."""
    g = plan.graph
    norm, c = g.nodes[nid], g.nodes[cut]
    M, N = (int(d) for d in c.shape)
    if norm.op == "batch_norm" and not norm.attrs.get("batch_stats"):
        raise AnalysisError(f"{norm.origin}: an eval-mode batch norm after the matmul (running statistics) is "
                            "not templated here")
    if norm.op == "batch_norm" and g.half:
        raise AnalysisError(f"{norm.origin}: a training-mode batch norm after a float16 matmul is not templated")
    if norm.op == "batch_norm" and norm.attrs.get("update"):
        raise AnalysisError(f"{norm.origin}: a training-mode batch norm that tracks running statistics updates them "
                            "in place (the verifier compares the model's buffers after each call); that update is not "
                            "templated here")
    groups = int(norm.attrs["groups"]) if norm.op == "group_norm" else 1
    if groups < 1 or N % groups:
        raise AnalysisError(f"{norm.origin}: {groups} groups do not divide N = {N}")
    inside = set(region)
    users = g.users()
    if norm.op == "group_norm":
        for i in region:
            n = g.nodes[i]
            if n.op == "reduce":
                raise AnalysisError(f"{n.origin}: a reduction over the output features next to a GroupNorm (the "
                                    "row program runs one group of columns at a time)")
            if n.op not in ("unary", "binary", "group_norm"):
                raise AnalysisError(f"{n.origin}: {n.op} next to a GroupNorm after the matmul")
            if tuple(n.shape) != (M, N):
                raise AnalysisError(f"{n.origin}: shape {n.shape} next to a GroupNorm (only the matmul's "
                                    f"{(M, N)} is templated)")
    root_of = lambda k: plan.aliases.get(k, k)  # noqa: E731
    # operands of the region (outside it): in group mode they are seen per group, and must be read only here
    for i in region:
        for a in g.nodes[i].args:
            if isinstance(a, int) and a not in inside and a != cut and groups > 1:
                s = tuple(g.nodes[a].shape)
                if s and s[-1] == N and any(u not in inside for u in users[a]):
                    raise AnalysisError(f"{g.nodes[a].origin}: an operand of a GroupNorm region read elsewhere too")
                r = root_of(a)
                if r != a and s and s[-1] == N:
                    raise AnalysisError(f"{g.nodes[a].origin}: a view of an operand next to a GroupNorm")
    return M, N, groups


def _regrouped(plan: Plan, cut: int, region: list[int], M: int, N: int, groups: int) -> Graph:
    """The graph with every node id kept (the cube's operands are matched by id) and the region's shapes seen per
    group of columns; the norm's expansion is appended to it and what read the norm reads its last node."""
    g = plan.graph
    S = N // groups
    inside = set(region)

    def group_shape(shape: tuple[int, ...], what: str) -> tuple[int, ...]:
        """A shape of the region seen per group of columns."""
        s = tuple(int(d) for d in shape)
        if groups == 1 or not s or s[-1] == 1:
            return s
        if s[-1] == N and (len(s) == 1 or all(d == 1 for d in s[:-1]) or s == (M, N)):
            return s[:-1] + (S,)
        raise AnalysisError(f"{what} of shape {s} next to a GroupNorm (operands per column, per row, full or "
                            "scalar)")

    g2 = Graph(nodes=[], input_names=list(g.input_names), output=g.output, init_source=g.init_source,
               init_params=list(g.init_params), half=g.half)
    region_ext = {a for i in region for a in g.nodes[i].args if isinstance(a, int) and a not in inside}
    for n in g.nodes:
        shape = tuple(n.shape)
        if n.id == cut or n.id in inside or n.id in region_ext:
            shape = group_shape(shape, n.origin or n.op)
        g2.nodes.append(Node(n.id, n.op, list(n.args), dict(n.attrs), shape, n.dtype, n.origin))
    return g2


def _expand(g2: Graph, nid: int, norm: Node, region: list[int], N: int, info: NormInfo, exp: list[int]) -> Any:
    """The norm's expansion appended to ``g2`` (its nodes in ``exp``): mean, variance, rsqrt for a GroupNorm; the
    batch statistics as inputs for a BatchNorm; the affine weight and bias. Returns the last node."""
    def add(op: str, args: list[Any], attrs: dict[str, Any], shape: tuple[int, ...], in_region: bool = True) -> int:
        k = int(g2.add(op, args, attrs, shape, origin=norm.origin))
        if in_region:
            exp.append(k)
        return k

    x = norm.args[0]
    w, b = (norm.args[1], norm.args[2]) if norm.attrs.get("affine") else (None, None)
    eps = float(norm.attrs["eps"])
    sh = g2.nodes[nid].shape
    rsh = sh[:-1] + (1,)
    if norm.op == "group_norm":
        mu = add("reduce", [x], {"fn": "mean", "dims": [1]}, rsh)
        d = add("binary", [x, Ref(mu)], {"fn": "sub"}, sh)
        var = add("reduce", [Ref(add("unary", [Ref(d)], {"fn": "square"}, sh))], {"fn": "mean", "dims": [1]}, rsh)
        inv = add("unary", [Ref(add("binary", [Ref(var), Const(eps)], {"fn": "add"}, rsh))], {"fn": "rsqrt"}, rsh)
        y = add("binary", [Ref(d), Ref(inv)], {"fn": "mul"}, sh)
    else:
        mean = add("input", [], {"index": -2, "name": BN_MEAN}, (N,), False)
        rstd = add("input", [], {"index": -3, "name": BN_RSTD}, (N,), False)
        info.bn = BatchNormInfo(int(x), list(region[:region.index(nid)]), eps, mean, rstd)
        info.internal += [mean, rstd]
        d = add("binary", [x, Ref(mean)], {"fn": "sub"}, sh)
        y = add("binary", [Ref(d), Ref(rstd)], {"fn": "mul"}, sh)
    if w is not None:
        y = add("binary", [Ref(y), w], {"fn": "mul"}, sh)
        y = add("binary", [Ref(y), b], {"fn": "add"}, sh)
    return y


def _check_bn_chain(g: Graph, cut: int, bn: BatchNormInfo) -> None:
    """The chain before a training-mode BatchNorm: elementwise, reading C, constants and per-column operands
    (the column-statistics phase evaluates it on its column slices)."""
    N = int(g.nodes[cut].shape[1])
    have = {cut}
    for i in bn.pre:
        n = g.nodes[i]
        if n.op not in ("unary", "binary"):
            raise AnalysisError(f"{n.origin}: {n.op} before a training-mode BatchNorm after the matmul (only an "
                                "elementwise chain)")
        for a in n.args:
            if isinstance(a, int) and a not in have and tuple(g.nodes[a].shape) not in ((N,), (1, N)):
                raise AnalysisError(f"{n.origin}: an operand of shape {g.nodes[a].shape} before a training-mode "
                                    "BatchNorm (constants and per-column operands only)")
        have.add(i)
    if bn.src not in have:
        raise AnalysisError("the BatchNorm does not read the matmul's output")


