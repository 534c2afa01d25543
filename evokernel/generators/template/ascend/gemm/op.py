"""The matmul the cube unit computes (``CubeOp``), shared by the families that run a GEMM on the cube: the
``ascend_cube`` family (a task's matmul and what follows it) and the ``ascend_conv`` family's implicit GEMM. Its
fields say what the kernel (:mod:`.kernel`) writes: shapes, dtypes, B's layout, the bias, a ReLU in the Fixpipe,
the batch; and what only the cube family fills in (an epilogue or a row program on the vector cores).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evokernel.generators.template.front.graph import Graph

L1_BYTES, L0A_BYTES, L0B_BYTES, L0C_BYTES = 512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024
CUBE_CORES = 20  # GetCoreNumAic() of the emulated 910B; the host asks the platform, this is for geometry


@dataclass
class CubeExt:
    name: str    # OpDef / kernel argument name
    pyexpr: str  # how ModelNew passes it
    root: int


@dataclass
class CubeOp:
    graph: Graph
    snake: str
    M: int
    K: int
    N: int
    trans_b: bool
    half: bool
    exts: list[CubeExt]  # a, b, then the bias when there is one
    bias: bool
    relu: bool
    out_shape: tuple[int, ...]
    init_source: str = ""
    epilogue: list = field(default_factory=list)  # elementwise steps on the vector cores (a MIX kernel)
    family: str = "ascend_cube"
    op_class: str = "matmul"
    reduces: list[int] = field(default_factory=list)
    batch: int = 1  # batch entries (a batched matmul: ascend/gemm/batch.py)
    row_op: Any = None  # a row program on the vector cores over whole rows of C (ascend/cube/rows.py)

    @property
    def rows(self) -> int:
        return self.M

    @property
    def op_type(self) -> str:
        return "".join(p.capitalize() for p in (self.snake + "_custom").split("_") if p)

    @property
    def kernel_name(self) -> str:
        return self.snake + "_custom"

    @property
    def esize(self) -> int:
        return 2 if self.half else 4

    @property
    def mix(self) -> bool:
        return bool(self.epilogue) or self.row_op is not None
