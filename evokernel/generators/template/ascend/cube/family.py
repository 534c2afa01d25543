"""Ascend C templates for matrix multiplication on the cube unit (the ``ascend_cube`` family).

A task whose graph is one gemm (``a @ b``, ``a @ b.T``, ``nn.Linear``), optionally followed by a per-column
bias add and/or a ReLU, becomes a cube-only operator: the output is cut into ``base_m x base_n`` tiles
spread over the cube cores; per tile a loop over K in ``base_k`` steps copies A and B from GM into L1
(ND -> NZ), loads them into L0A/L0B (B's fractals transposed unless B is given transposed), accumulates
``Mmad`` results in L0C (the bias enters through the bias table at the first step), and writes the tile
out through the Fixpipe (float -> half rounding and ReLU on the way).

Knobs (``KNOBS`` below): ``base_m``, ``base_n`` (the L0C tile), ``base_k``
(the K step: longer copies and fewer Mmads when larger), ``buffer_num`` (two L1/L0 buffers let the next
step's copies overlap the current Mmad). A schedule whose buffers do not fit L1 (512 KiB), L0A/L0B
(64 KiB) or L0C (128 KiB) has no geometry (None), so the generator never proposes it.

An epilogue beyond bias and ReLU (a chain of elementwise functions and scalar operations) makes it a MIX
kernel: the cube core writes each float tile to its AI core's workspace slot and flags (CrossCoreSetFlag
mode 2) its two vector cores, which run the chain on half the rows each, write the output and flag back
before the slot takes the next tile.

Anything more after the matmul -- its output read twice, full-tensor or per-row operands, row reductions and
normalisations over N (softmax, logsumexp, sums, layer/RMS norm) -- is a row program on the vector cores
over whole rows of C (:mod:`.rows`); a GroupNorm or a training-mode BatchNorm after the matmul: :mod:`.norms`
(its column statistics :mod:`.cols`, small groups :mod:`.gnorm`), a pooling along the features: :mod:`.pool`.
Batched matmul: :mod:`..gemm.batch`; the split-K knobs (atomic adds in float32, a float workspace summed by the
vector cores otherwise): :mod:`.splitk`; A resident in L1: :mod:`.resident`.

This module is the family's row in the table (:mod:`..families`): its knobs, transforms and priors, and the
operator project. The task analysis is :mod:`.prepare` (``CubeOp``: :mod:`..gemm.op`), the tiling
:mod:`.geometry`, the host :mod:`.host`, the kernel :mod:`.kernel` (the GEMM class of :mod:`..gemm.kernel` and
its variants), the MIX epilogue and entry :mod:`.mix`.

A float32 B given as K x N goes into L1 as 16-row bands (Zz, 16 x 8 fractals) and into L0B through
``LoadDataWithTranspose`` (each 16 x 16 square of two neighbouring fractals becomes two Zn fractals).

What is refused, by name: N not a multiple of 16 (Fixpipe writes 16-column blocks),
batched gemm, two matmuls in one task, more than one kernel after the matmul (e.g. a whole-tensor reduction
then its use), and what the vector template refuses in the row program (reductions over other dims ...).
"""
from __future__ import annotations

import json
from typing import Any

from evokernel.generators.template.ascend.cube import prepare as _prepare
from evokernel.generators.template.ascend.cube import rows as ROWS
from evokernel.generators.template.ascend.cube.geometry import geometry
from evokernel.generators.template.ascend.cube.host import host_source, result_alloc, tiling_source
from evokernel.generators.template.ascend.cube.kernel import kernel
from evokernel.generators.template.ascend.gemm import balance
from evokernel.generators.template.ascend.gemm.op import CubeOp
from evokernel.generators.template.ascend.project import binding_source, model_source
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.lower import Plan

NAME = "ascend_cube"
STAGE = "gemm"  # the plan stage this family drafts: a matmul anchor
SEVERAL_STAGES = True  # and what follows it (it checks the rest itself)
# the L0C tile (base_m x base_n), the K step, L1/L0 buffering; the row program's hand-over, split-K, resident A
KNOBS: dict[str, list[Any]] = {"base_m": [64, 128, 256], "base_n": [64, 128, 256], "base_k": [32, 64, 128, 256],
                               "buffer_num": [1, 2], "row_split": ["all", "block"], "split_k": [1, 2, 4],
                               "split_sum": ["auto", "workspace"], "a_resident": [False, True]}
DEFAULTS: dict[str, Any] = {"base_m": 64, "base_n": 64, "base_k": 32, "buffer_num": 1, "row_split": "all",
                            "split_k": 1, "split_sum": "auto", "a_resident": False}
TRANSFORMS: list[tuple[str, dict[str, Any]]] = [
    # longer K steps (fewer, longer copies and Mmads), larger L0C tiles (more reuse of each loaded fractal), and back
    ("base_k_64", {"base_k": 64}),
    ("base_k_128", {"base_k": 128}),
    ("base_k_256", {"base_k": 256}),
    ("base_mn_128", {"base_m": 128, "base_n": 128}),
    ("base_m_256", {"base_m": 256}),
    ("base_n_256", {"base_n": 256}),
    ("base_mn_64", {"base_m": 64, "base_n": 64}),
    ("base_k_32", {"base_k": 32}),
    # a row program after the matmul (rows.py): row blocks handed over per AI core (cube and vector work
    # overlap; a core per row block) or the whole of C first, then every vector core (all cores for small M)
    ("rows_by_block", {"row_split": "block"}),
    ("rows_after_all", {"row_split": "all"}),
    # cube-only matmuls with few output tiles and a long K: K ranges on more cube cores, atomic adds into C
    ("split_k_2", {"split_k": 2}),
    ("split_k_4", {"split_k": 4}),
    ("split_k_1", {"split_k": 1}),
    # split-K's partial sums through the float workspace and the vector cores, and back to atomic adds
    ("split_sum_workspace", {"split_sum": "workspace"}),
    ("split_sum_auto", {"split_sum": "auto"}),
    # a row block of A kept in L1 for all its N tiles (one long copy instead of one per tile and K step)
    ("a_resident", {"a_resident": True}),
    ("a_per_tile", {"a_resident": False}),
]


def prepare(plan: Plan, task_name: str, task_source: str = "") -> CubeOp:
    """A gemm stage and what follows it as one cube operator (:func:`.prepare.prepare`)."""
    return _prepare.prepare(plan, task_name, task_source)


def priors(op: CubeOp) -> dict[str, float]:
    """Short K steps and small tiles are copy-bound: grow them first; split-K when few output tiles leave cube cores
    idle over a long K, and A resident in L1 once the K steps are long."""
    p = {"base_k_128": 0.03, "base_mn_128": 0.025, "base_k_64": 0.015}
    # one long copy of A per row block (npu suites, modelled: 2-15% faster after base_k_128 + double_buffer,
    # slower from the single-buffered draft; evals/bench/cube_knobs.py)
    p["a_resident"] = 0.018
    if getattr(op, "batch", 1) == 1 and getattr(op, "K", 0) >= 1024 and \
            -(-op.M // 64) * -(-op.N // 64) < 20:  # fewer draft tiles than the 20 cube cores, a long K
        p["split_k_2"] = 0.028
    return p


def draft_knobs(op: CubeOp) -> dict[str, Any]:
    """The draft's base block and buffering, chosen by the modelled cube/MTE balance (:mod:`..gemm.balance`) among
    the blocks whose buffers fit (the family's geometry, with the other knobs at their defaults)."""
    space = {k: KNOBS[k] for k in ("base_m", "base_n", "base_k", "buffer_num")}
    return balance.best_block(op, space, lambda knobs: geometry(op, knobs) is not None, DEFAULTS)


def render_project(op: CubeOp, knobs: dict[str, Any]) -> tuple[dict[str, str], None, dict[str, int] | None]:
    """The six strings of the operator project and the host's geometry (None: infeasible)."""
    geo = geometry(op, knobs)
    T = "half" if op.half else "float"
    tiling_cls = f"{op.op_type}TilingData"
    rg = None
    if op.row_op is not None:
        rg = ROWS.row_geometry(op.row_op, knobs, int(knobs["base_m"]))
        if rg is None:
            raise AnalysisError("no tile of the row program after the matmul fits the vector core's Unified Buffer")
    split = int(knobs.get("split_k", 1)) if geo is not None else 1
    tiling = tiling_source(op, knobs, rg, split, tiling_cls)
    host = host_source(op, knobs, rg, split, tiling_cls)
    text = kernel(op, knobs, T, tiling_cls)
    ty = "float16" if op.half else "float"
    desc = [{"op": op.op_type, "language": "cpp",
             "input_desc": [{"name": e.name, "param_type": "required", "format": ["ND"], "type": [ty]}
                            for e in op.exts],
             "output_desc": [{"name": "out", "param_type": "required", "format": ["ND"], "type": [ty]}]}]
    params = ", ".join(f"const at::Tensor& {e.name}" for e in op.exts)
    args = ", ".join(e.name for e in op.exts)
    bind = binding_source(op.kernel_name, op.op_type, params, result_alloc(op, knobs, rg, split), args,
                          "matmul on the cube unit")
    model = model_source(op.init_source, op.graph.input_names, op.kernel_name, ", ".join(e.pyexpr for e in op.exts))
    parts = {"project_json_src": json.dumps(desc, indent=4), "host_tiling_src": tiling, "host_operator_src": host,
             "kernel_src": text, "python_bind_src": bind, "model_src": model}
    return parts, None, geo
