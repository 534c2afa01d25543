"""The ``ascend_conv`` family: one convolution, as an implicit GEMM on the cube or a direct convolution on the vector
cores.

A task whose graph is one convolution (``nn.Conv1d`` / ``nn.Conv2d`` / ``F.conv1d`` / ``F.conv2d``, grouped or
depthwise, with or without bias, float32) becomes a vector-only operator. A block's unit of work is a chunk of
``woTile`` columns of one output row ``(n, oh)`` (the host cuts rows longer than the UB holds) for a pass of ``co_tile`` output channels: the accumulator (``co_tile`` rows of ``Wo`` floats,
each row rounded up to a 32-byte block) starts at the bias (``Duplicate``); for every input channel of the
pass's groups and every kernel tap ``(kh, kw)`` whose input row exists, the input row shifted by the tap is
copied from GM with ``DataCopyPad`` (the left zero padding of the convolution is the copy's ``leftPadding``,
the right one is a shorter ``count``), and every output channel of the pass adds ``weight * row`` with one
``Axpy``; the pass's rows go back to GM with one strided ``DataCopyPad``. Bias and weights are read by the
scalar unit (``w_mode`` ``gm``: each weight with ``GlobalTensor::GetValue``; ``ub``: the pass's weights,
contiguous in GM, copied to UB once per work item). A stride along W loads the span of input columns a tap's
outputs read and picks every ``STRIDE_W``-th value with ``Gather`` (byte offsets written once per block).

This is the convolution an Ascend C engineer writes without the cube: public API only (DataCopyPad with
padding, Duplicate, Axpy, queues), no alignment assumption on W. It is not the fast lowering of a dense
convolution: the ``lowering`` knob's ``cube`` (the draft's) writes an implicit GEMM on the cube instead
(:mod:`.implicit_gemm`: im2col by the vector cores into a GM workspace, SyncAll, Mmad) wherever that applies
(groups 1); this direct convolution (:mod:`.direct`) remains for grouped / depthwise convolutions and
``lowering = vector``. Within the cube lowering, ``conv_algo`` picks the im2col: ``gm_img2col`` (the matrix in
GM, :mod:`.implicit_gemm`) or ``l1_img2col`` (LoadData 3D from the map in L1, :mod:`.l1_img2col`); the draft
takes the one whose model of the AI core's pipes is faster (``l1_img2col.faster``). The operator and what both
lowerings share: :mod:`.op`.

Knobs (``KNOBS`` below; ``lowering``, ``base_m/n/k`` belong to the cube lowering): ``co_tile`` (output channels
per pass: larger = each loaded input row feeds more Axpys, more UB), ``buffer_num`` (a double-buffered input-row
queue lets the next row's copy overlap the current Axpys), ``blocks`` (all 40 vector cores or half of them),
``w_mode``. A schedule whose buffers do not fit the Unified Buffer has no geometry (None).

Refused, by name: float16,
transposed and 3-D convolutions, left padding over 8 elements (DataCopyPad pads at most 32 bytes), and
anything fused after the convolution (one kernel: the convolution alone).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.conv import direct, implicit_gemm, l1_img2col
from evokernel.generators.template.ascend.conv import op as conv_op
from evokernel.generators.template.ascend.conv.op import ConvOp
from evokernel.generators.template.ascend.gemm import balance
from evokernel.generators.template.front.lower import Plan

NAME = "ascend_conv"
STAGE = "conv"  # the plan stage this family drafts: a convolution anchor
SEVERAL_STAGES = True  # it refuses what follows the convolution by name itself
# vector: output channels per pass, the input-row queue's buffers, cores, weights read from GM or each pass's
# copied to UB; cube: an implicit GEMM (implicit_gemm.py) where it applies (dense), with the cube's tile knobs
KNOBS: dict[str, list[Any]] = {"co_tile": [8, 16, 32, 64], "buffer_num": [1, 2], "blocks": ["all", "half"],
                               "w_mode": ["gm", "ub"], "lowering": ["cube", "vector"], "base_m": [64, 128, 256],
                               "base_n": [64, 128, 256], "base_k": [32, 64, 128, 256],
                               "conv_algo": ["gm_img2col", "l1_img2col"]}
DEFAULTS: dict[str, Any] = {"co_tile": 16, "buffer_num": 1, "blocks": "all", "w_mode": "gm",
                            "lowering": "cube",  # the cube lowering is the fast one where it applies
                            "base_m": 64, "base_n": 64, "base_k": 32, "conv_algo": "gm_img2col"}
# more output channels per pass reuse each loaded input row for more Axpys (more UB)
TRANSFORMS: list[tuple[str, dict[str, Any]]] = [
    ("co_tile_32", {"co_tile": 32}), ("co_tile_64", {"co_tile": 64}), ("co_tile_16", {"co_tile": 16}),
    ("co_tile_8", {"co_tile": 8}), ("weights_ub", {"w_mode": "ub"}), ("weights_gm", {"w_mode": "gm"}),
    ("lowering_vector", {"lowering": "vector"}), ("lowering_cube", {"lowering": "cube"}),
    ("img2col_l1", {"conv_algo": "l1_img2col"}), ("img2col_gm", {"conv_algo": "gm_img2col"})]
EXPLORE_FIXED: dict[str, Any] = {"lowering": "cube"}  # drafts take the fast lowering; the vector one is a refinement


def prepare(plan: Plan, task_name: str, task_source: str = "") -> ConvOp:
    """The plan's convolution as one operator (:func:`.op.prepare`)."""
    return conv_op.prepare(plan, task_name, task_source)


def priors(op: ConvOp) -> dict[str, float]:
    """Each loaded input row feeds co_tile Axpys: more channels per pass first, and weights in UB (GM scalar reads
    cost most); for the cube lowering the GEMM's K steps and tiles as for a matmul (the vector knobs are cosmetic
    there)."""
    return {"weights_ub": 0.04, "co_tile_32": 0.03, "co_tile_64": 0.02,
            "base_k_128": 0.035, "base_mn_128": 0.025, "base_k_64": 0.015, "double_buffer": 0.03}


def draft_knobs(op: ConvOp) -> dict[str, Any]:
    """Where the cube lowering applies, the draft's GEMM base block and buffering chosen by the modelled cube/MTE
    balance (:mod:`..gemm.balance`) among those whose buffers fit (the lowering's geometry, UB rows included)."""
    if implicit_gemm.applies(op):
        return {}
    space = {k: KNOBS[k] for k in ("base_m", "base_n", "base_k", "buffer_num")}
    block = balance.best_block(implicit_gemm.gemm_op(op), space,
                               lambda knobs: implicit_gemm.geometry(op, knobs) is not None, DEFAULTS)
    if l1_img2col.faster(op, {**DEFAULTS, **block}):
        return {**block, "conv_algo": "l1_img2col"}
    return block


def render_project(op: ConvOp, knobs: dict[str, Any]) -> tuple[dict[str, str], None, dict[str, int] | None]:
    """The six strings of the operator project and the host's geometry (None: infeasible).

    ``lowering`` ``cube`` (the draft's) writes the implicit GEMM (:mod:`.implicit_gemm`) when it applies to the
    convolution (dense); otherwise, and with ``lowering`` ``vector``, the direct convolution (:mod:`.direct`)."""
    if knobs.get("lowering", "vector") == "cube" and not implicit_gemm.applies(op):
        if knobs.get("conv_algo") == "l1_img2col" and l1_img2col.geometry(op, knobs) is not None:
            return l1_img2col.render_project(op, knobs)
        return implicit_gemm.render_project(op, knobs)
    return direct.render_project(op, knobs)
