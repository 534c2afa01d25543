"""A convolution's implicit GEMM in numbers (the cube lowering, :mod:`.implicit_gemm`, and its vector cores' im2col,
:mod:`.im2col`): per image ``out[n]`` (Cout x Ho*Wo) = ``W`` (Cout x Cin*KH*KW, +1 column with the bias) @
``col[n]``; the UB budget of the vector cores' rows.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.conv.op import _dims

UB_FLOATS = 196608 // 4
AIV_CORES = 40
FILL = 1024  # floats of each constant UB row (zeros, ones) the vector cores copy into col
MARGIN = 64  # floats of UB left unused (alignment slack)


def _ceil(a: int, b: int) -> int:
    return -(-a // b) * b


def _shape(op: Any) -> dict[str, int]:
    n, c, h, w, co, ho, wo, kh, kw = _dims(op)
    P = ho * wo
    kc = c * kh * kw
    direct = (kh == 1 and kw == 1 and op.padding == (0, 0) and tuple(op.stride) == (1, 1) and not op.bias
              and P % 16 == 0)
    copy_out = P % 16 != 0
    return {"batch": n, "cin": c, "h": h, "w": w, "cout": co, "ho": ho, "wo": wo, "kh": kh, "kw": kw, "P": P,
            "Np": _ceil(P, 16), "kc": kc, "K": kc + (1 if op.bias else 0), "im2col": int(not direct),
            "copyOut": int(copy_out)}


def _ci_rows(op: Any) -> bool:
    """1-D at stride 1: a copy's rows are input channels (else output rows, one per copy in 1-D)."""
    return op.nd == 1 and op.stride[1] == 1
