"""The cube family's kernel source for one schedule: the GEMM's AIC class (:mod:`..gemm.kernel`) handed on to the
variant the operator and knobs ask for -- A resident in L1 (:mod:`.resident`), a row program after the matmul
(:mod:`.rows`), a batched matmul (:mod:`..gemm.batch`), split-K (:mod:`.splitk`) -- or the MIX elementwise epilogue
(:mod:`.mix`).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.cube import resident, rows, splitk
from evokernel.generators.template.ascend.cube.geometry import geometry
from evokernel.generators.template.ascend.cube.mix import mixed
from evokernel.generators.template.ascend.gemm import batch
from evokernel.generators.template.ascend.gemm import kernel as gemm_kernel
from evokernel.generators.template.ascend.gemm.op import CubeOp


def kernel(op: CubeOp, knobs: dict[str, Any], T: str, tiling_cls: str) -> str:
    text = gemm_kernel.kernel(op, knobs, T, tiling_cls)
    if knobs.get("a_resident") and geometry(op, knobs) is not None:
        return resident.resident(op, knobs, text, T, tiling_cls)
    if op.row_op is not None:
        return rows.mix_rows(op, knobs, text, T, tiling_cls)
    if op.batch != 1:
        text = batch.batch_kernel(op, text, T, tiling_cls)
    if int(knobs.get("split_k", 1)) > 1 and geometry(op, knobs) is not None:
        return splitk.splitk_kernel(op, knobs, text, T, tiling_cls)  # atomic adds, or its own MIX kernel
    return mixed(op, text, T, tiling_cls) if op.mix else text
