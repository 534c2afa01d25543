"""A task's matmul and what follows it as one cube operator (``CubeOp``), or AnalysisError naming what the cube
family does not write: a lone ReLU goes to the Fixpipe, a chain of elementwise functions and scalar operations to
the vector cores of a MIX kernel (:mod:`.mix`), anything more (C read twice, full-tensor, per-row or per-column
operands, row reductions and normalisations, a GroupNorm, a training-mode BatchNorm, a pooling along the features)
to a row program (:mod:`.rows`).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.cube import norms as NORMS
from evokernel.generators.template.ascend.cube import rows as ROWS
from evokernel.generators.template.ascend.gemm.op import CubeExt, CubeOp
from evokernel.generators.template.ascend.names import _snake, kernel_operands, own_init
from evokernel.generators.template.ascend.vecops import BIN_OP, unary_code
from evokernel.generators.template.front.graph import AnalysisError, Const
from evokernel.generators.template.front.lower import Plan


def prepare(plan: Plan, task_name: str, task_source: str = "") -> CubeOp:
    """A gemm stage as one cube operator, or AnalysisError naming what the template cannot do."""
    g = plan.graph
    st = plan.stages[0]
    gemm = g.nodes[st.anchor]
    a_id, b_id = gemm.args[0], gemm.args[1]
    root_of = lambda nid: plan.aliases.get(nid, nid)  # noqa: E731
    batch = int(gemm.attrs.get("batch", 1))
    if batch != 1 and (len(gemm.shape) < 3 or len(g.nodes[a_id].shape) != len(gemm.shape)
                       or len(g.nodes[b_id].shape) != len(gemm.shape)):
        raise AnalysisError("a batched matmul whose operands do not share the batch dims is not templated")
    if batch == 1 and len(gemm.shape) != 2:
        raise AnalysisError("a matmul of a (..., M, K) input by a 2-D B (leading dims folded into M) is not "
                            "templated (2-D a @ b and batched a @ b with the same batch dims are)")
    M, N, K = int(gemm.attrs["m"]), int(gemm.attrs["n"]), int(gemm.attrs["k"])
    trans_b = bool(gemm.attrs.get("trans_b"))
    half = bool(getattr(g, "half", False))
    if N % 16:
        raise AnalysisError(f"N = {N} is not a multiple of 16: the Fixpipe writes the output in 16-column blocks")
    # epilogue: [add a per-column (N,) operand: the cube's bias table], then a chain of elementwise functions
    # and scalar operations; a lone ReLU is the Fixpipe's, anything else runs on the vector cores (MIX); what
    # is more than such a chain (C read twice, full-tensor operands, row reductions) is a row program
    gemms = [s for s in plan.stages if s.family in ("gemm", "gemv")]
    if len(gemms) > 1:
        raise AnalysisError(f"the task has {len(gemms)} matmuls: the cube template writes one matmul and its "
                            "epilogue (one kernel)")
    rest = plan.stages[1:]
    NORMS.check_rest(plan)  # one row region, or regions around one GroupNorm / training-mode BatchNorm
    bias_id, chain = None, []
    cur = st.anchor
    nodes = list(st.nodes)
    if nodes:
        n = g.nodes[nodes[0]]
        if n.op == "binary" and n.attrs.get("fn") == "add" and all(isinstance(a, int) for a in n.args):
            other = next(a for a in n.args if a != cur)
            if tuple(g.nodes[other].shape) in ((N,), (1, N)) and g.nodes[root_of(other)].op in ("input", "param"):
                bias_id, cur = other, nodes.pop(0)
    cut = cur
    row_region: list[int] | None = None
    if rest:
        row_region = nodes + NORMS.rest_nodes(rest)
    for nid in nodes if row_region is None else []:
        n = g.nodes[nid]
        if n.op == "unary" and cur in n.args:
            unary_code(n.attrs["fn"], n.attrs, "d", "x", ["t0", "t1"], "n")  # raises for an unknown function
            chain.append(("unary", n.attrs["fn"], dict(n.attrs)))
            cur = nid
        elif n.op == "binary" and cur in n.args and n.attrs.get("fn") in BIN_OP and \
                any(isinstance(a, Const) for a in n.args):
            const = next(a for a in n.args if isinstance(a, Const))
            chain.append(("binary", n.attrs["fn"], float(const.value), n.args[0] is const))
            cur = nid
        else:  # an operand beyond constants: the row program takes it
            row_region = list(nodes)
            break
    row_op = None
    if row_region is not None:
        row_op = ROWS.prepare_rows(plan, cut, row_region, task_name, task_source)
        chain, cur = [], row_region[-1]
    if batch != 1 and (row_op is not None or (chain and chain != [("unary", "relu", {"fn": "relu"})])):
        raise AnalysisError("a vector epilogue after a batched matmul is not templated (bias and ReLU are: the "
                            "bias table and the Fixpipe)")
    relu = chain == [("unary", "relu", {"fn": "relu"})] or (len(chain) == 1 and chain[0][:2] == ("unary", "relu"))
    epilogue = [] if relu else chain
    if root_of(g.output) != cur:
        raise AnalysisError("the output is not produced by the matmul kernel")
    exts = [CubeExt(*o) for o in kernel_operands(g, (a_id, b_id, bias_id), root_of,
                                                 "matmul operands must be inputs or parameters")]
    init_source = g.init_source if (not task_source or own_init(task_source)) else ""
    if row_op is not None:
        _add_row_operands(exts, row_op, cut)
    return CubeOp(g, _snake(task_name), M, K, N, trans_b, half, exts, bias_id is not None, relu,
                  tuple(g.nodes[g.output].shape), init_source, epilogue=epilogue, row_op=row_op, batch=batch)


def _add_row_operands(exts: list[CubeExt], row_op: Any, cut: int) -> None:
    """The row program's own operands (residuals, norm weights; + what a phase before it reads) after the cube's,
    under names unique among the kernel's arguments; C and what the kernel computes (no pyexpr) are not operands."""
    used = {e.name for e in exts}
    for e in list(row_op.exts) + list(getattr(row_op, "phase_exts", [])):
        if e.nid != cut and e.pyexpr and all(x.root != e.root for x in exts):
            name = e.name
            while name in used or name in ("out", "workspace", "tiling", "slot"):
                name += "_"
            used.add(name)
            e.name = name
            exts.append(CubeExt(name, e.pyexpr, e.root))
