"""Vector instruction sequences for the Ascend C templates: an elementwise function or a binary op as a list
of emulated AscendC calls (Exp, Ln, Div, Muls, ...) in overflow-safe forms, scalar operands, the UB buffer pool,
and the reduce/combine tables the row and column kernels share.
"""
from __future__ import annotations

import math
from typing import Any

from evokernel.generators.template.ascend.names import flit
from evokernel.generators.template.front.graph import AnalysisError

UNARY_SCRATCH = {"rsqrt": 1, "recip": 1, "sigmoid": 1, "tanh": 1, "gelu_tanh": 1, "gelu": 2, "erf": 2, "elu": 1,
                 "selu": 1, "softplus": 2, "mish": 2, "softsign": 1, "hardswish": 1, "logsigmoid": 1, "powc": 1}

_AS_P = 0.3275911  # Abramowitz & Stegun 7.1.26: erf(z) ~ 1 - poly(t) exp(-z^2), t = 1 / (1 + p z), |err| < 1.5e-7
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class Scalar:
    """A scalar operand: a literal (``value`` known) or a C++ float expression."""

    def __init__(self, expr: str, value: float | None = None):
        self.expr, self.value = expr, value

    def neg(self) -> str:
        return flit(-self.value) if self.value is not None else f"(-{self.expr})"

    def recip(self) -> str:
        if self.value is not None:
            return flit(1.0 / self.value) if self.value != 0 else "INFINITY"
        return f"(1.0f / {self.expr})"


def _poly(D: str, t: str, n: str) -> list[str]:
    a1, a2, a3, a4, a5 = _AS_A
    return [f"Muls({D}, {t}, {flit(a5)}, {n});", f"Adds({D}, {D}, {flit(a4)}, {n});", f"Mul({D}, {D}, {t}, {n});",
            f"Adds({D}, {D}, {flit(a3)}, {n});", f"Mul({D}, {D}, {t}, {n});", f"Adds({D}, {D}, {flit(a2)}, {n});",
            f"Mul({D}, {D}, {t}, {n});", f"Adds({D}, {D}, {flit(a1)}, {n});", f"Mul({D}, {D}, {t}, {n});"]


def unary_code(fn: str, attrs: dict[str, Any], D: str, X: str, T: list[str], n: str) -> list[str]:
    """Instructions computing ``D = fn(X)`` over ``n`` elements (``T``: scratch tensors)."""
    c: list[str] = []
    e = c.append
    if fn == "relu":
        e(f"Relu({D}, {X}, {n});")
    elif fn == "abs":
        e(f"Abs({D}, {X}, {n});")
    elif fn == "exp":
        e(f"Exp({D}, {X}, {n});")
    elif fn == "log":
        e(f"Ln({D}, {X}, {n});")
    elif fn == "sqrt":
        e(f"Sqrt({D}, {X}, {n});")
    elif fn == "neg":
        e(f"Muls({D}, {X}, {flit(-1.0)}, {n});")
    elif fn == "square":
        e(f"Mul({D}, {X}, {X}, {n});")
    elif fn == "rsqrt":  # 1 / sqrt(x) with an exact Div (Rsqrt is approximate on the device)
        c += [f"Sqrt({D}, {X}, {n});", f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});"]
    elif fn == "recip":
        c += [f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {X}, {n});"]
    elif fn == "sigmoid":  # 1 / (1 + exp(-x)): exp overflows to inf for x << 0 and 1 / inf = 0
        c += [f"Muls({D}, {X}, {flit(-1.0)}, {n});", f"Exp({D}, {D}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});"]
    elif fn == "silu":  # x / (1 + exp(-x))
        c += [f"Muls({D}, {X}, {flit(-1.0)}, {n});", f"Exp({D}, {D}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Div({D}, {X}, {D}, {n});"]
    elif fn == "tanh":  # 2 / (1 + exp(-2x)) - 1: saturates to +-1 without inf/inf
        c += [f"Muls({D}, {X}, {flit(-2.0)}, {n});", f"Exp({D}, {D}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Duplicate({T[0]}, 2.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});", f"Adds({D}, {D}, {flit(-1.0)}, {n});"]
    elif fn == "gelu_tanh":  # x * sigmoid(2 k (x + 0.044715 x^3))
        k = 2.0 * math.sqrt(2.0 / math.pi)
        c += [f"Mul({T[0]}, {X}, {X}, {n});", f"Muls({T[0]}, {T[0]}, {flit(0.044715)}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Mul({T[0]}, {T[0]}, {X}, {n});",
              f"Muls({T[0]}, {T[0]}, {flit(-k)}, {n});", f"Exp({T[0]}, {T[0]}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Div({D}, {X}, {T[0]}, {n});"]
    elif fn == "gelu":  # relu(x) - |x|/2 * poly(t) exp(-x^2/2), t = 1 / (1 + p |x| / sqrt 2)
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[1]}, {T[0]}, {flit(_AS_P / math.sqrt(2.0))}, {n});",
              f"Adds({T[1]}, {T[1]}, 1.0f, {n});", f"Duplicate({D}, 1.0f, {n});", f"Div({T[1]}, {D}, {T[1]}, {n});"]
        c += _poly(D, T[1], n)
        c += [f"Mul({T[1]}, {X}, {X}, {n});", f"Muls({T[1]}, {T[1]}, {flit(-0.5)}, {n});", f"Exp({T[1]}, {T[1]}, {n});",
              f"Mul({D}, {D}, {T[1]}, {n});", f"Mul({D}, {D}, {T[0]}, {n});", f"Muls({D}, {D}, {flit(-0.5)}, {n});",
              f"Relu({T[0]}, {X}, {n});", f"Add({D}, {D}, {T[0]}, {n});"]
    elif fn == "erf":  # sign(x) (1 - poly(t) exp(-x^2)), t = 1 / (1 + p |x|)
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[1]}, {T[0]}, {flit(_AS_P)}, {n});",
              f"Adds({T[1]}, {T[1]}, 1.0f, {n});", f"Duplicate({D}, 1.0f, {n});", f"Div({T[1]}, {D}, {T[1]}, {n});"]
        c += _poly(D, T[1], n)
        c += [f"Mul({T[1]}, {X}, {X}, {n});", f"Muls({T[1]}, {T[1]}, {flit(-1.0)}, {n});", f"Exp({T[1]}, {T[1]}, {n});",
              f"Mul({D}, {D}, {T[1]}, {n});", f"Muls({D}, {D}, {flit(-1.0)}, {n});", f"Adds({D}, {D}, 1.0f, {n});",
              f"Adds({T[0]}, {T[0]}, 1e-30f, {n});", f"Div({T[0]}, {X}, {T[0]}, {n});", f"Mul({D}, {D}, {T[0]}, {n});"]
    elif fn in ("elu", "selu"):  # max(x, 0) + alpha (exp(min(x, 0)) - 1)
        alpha = 1.6732632423543772 if fn == "selu" else float(attrs.get("alpha", 1.0))
        c += [f"Mins({T[0]}, {X}, 0.0f, {n});", f"Exp({T[0]}, {T[0]}, {n});", f"Adds({T[0]}, {T[0]}, {flit(-1.0)}, {n});",
              f"Muls({T[0]}, {T[0]}, {flit(alpha)}, {n});", f"Relu({D}, {X}, {n});", f"Add({D}, {D}, {T[0]}, {n});"]
        if fn == "selu":
            e(f"Muls({D}, {D}, {flit(1.0507009873554805)}, {n});")
    elif fn == "softplus":  # (max(z, 0) + log(1 + exp(-|z|))) / beta, z = beta x
        beta = float(attrs.get("beta", 1.0))
        if float(attrs.get("threshold", 20.0)) < 15.0:
            raise AnalysisError("softplus with a threshold below 15 (the linear branch is not emulated)")
        z = X
        if beta != 1.0:
            e(f"Muls({T[1]}, {X}, {flit(beta)}, {n});")
            z = T[1]
        c += [f"Abs({D}, {z}, {n});", f"Muls({D}, {D}, {flit(-1.0)}, {n});", f"Exp({D}, {D}, {n});",
              f"Adds({D}, {D}, 1.0f, {n});", f"Ln({D}, {D}, {n});", f"Relu({T[0]}, {z}, {n});",
              f"Add({D}, {D}, {T[0]}, {n});"]
        if beta != 1.0:
            e(f"Muls({D}, {D}, {flit(1.0 / beta)}, {n});")
    elif fn == "mish":  # x tanh(softplus(x)); softplus >= 0, so tanh = (1 - e) / (1 + e) with e = exp(-2 sp) <= 1
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[0]}, {T[0]}, {flit(-1.0)}, {n});", f"Exp({T[0]}, {T[0]}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Ln({T[0]}, {T[0]}, {n});", f"Relu({T[1]}, {X}, {n});",
              f"Add({T[0]}, {T[0]}, {T[1]}, {n});", f"Muls({T[0]}, {T[0]}, {flit(-2.0)}, {n});",
              f"Exp({T[0]}, {T[0]}, {n});", f"Muls({T[1]}, {T[0]}, {flit(-1.0)}, {n});",
              f"Adds({T[1]}, {T[1]}, 1.0f, {n});", f"Adds({T[0]}, {T[0]}, 1.0f, {n});",
              f"Div({T[1]}, {T[1]}, {T[0]}, {n});", f"Mul({D}, {X}, {T[1]}, {n});"]
    else:
        c += _unary_more(fn, attrs, D, X, T, n)
    return c


def _unary_more(fn: str, attrs: dict[str, Any], D: str, X: str, T: list[str], n: str) -> list[str]:
    """The rest of :func:`unary_code`: the piecewise and parametric functions."""
    c: list[str] = []
    e = c.append
    if fn == "softsign":
        c += [f"Abs({T[0]}, {X}, {n});", f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Div({D}, {X}, {T[0]}, {n});"]
    elif fn in ("hardsigmoid", "hardswish"):
        H = D if fn == "hardsigmoid" else T[0]
        c += [f"Muls({H}, {X}, {flit(1.0 / 6.0)}, {n});", f"Adds({H}, {H}, 0.5f, {n});", f"Maxs({H}, {H}, 0.0f, {n});",
              f"Mins({H}, {H}, 1.0f, {n});"]
        if fn == "hardswish":
            e(f"Mul({D}, {X}, {H}, {n});")
    elif fn == "relu6":
        c += [f"Relu({D}, {X}, {n});", f"Mins({D}, {D}, 6.0f, {n});"]
    elif fn == "leaky_relu":
        e(f"LeakyRelu({D}, {X}, {flit(float(attrs['slope']))}, {n});")
    elif fn == "clamp":
        lo, hi = attrs.get("lo"), attrs.get("hi")
        src = X
        if lo is not None:
            e(f"Maxs({D}, {src}, {flit(lo)}, {n});")
            src = D
        if hi is not None:
            e(f"Mins({D}, {src}, {flit(hi)}, {n});")
            src = D
        if src == X:
            e(f"Muls({D}, {X}, 1.0f, {n});")
    elif fn == "log1p":
        c += [f"Adds({D}, {X}, 1.0f, {n});", f"Ln({D}, {D}, {n});"]
    elif fn == "expm1":
        c += [f"Exp({D}, {X}, {n});", f"Adds({D}, {D}, {flit(-1.0)}, {n});"]
    elif fn == "logsigmoid":  # min(x, 0) - log(1 + exp(-|x|))
        c += [f"Abs({T[0]}, {X}, {n});", f"Muls({T[0]}, {T[0]}, {flit(-1.0)}, {n});", f"Exp({T[0]}, {T[0]}, {n});",
              f"Adds({T[0]}, {T[0]}, 1.0f, {n});", f"Ln({T[0]}, {T[0]}, {n});", f"Mins({D}, {X}, 0.0f, {n});",
              f"Sub({D}, {D}, {T[0]}, {n});"]
    elif fn == "powc":
        p = float(attrs["p"])
        if p == 0.0:
            e(f"Duplicate({D}, 1.0f, {n});")
        elif p == int(p) and abs(p) <= 8:
            q = int(abs(p))
            e(f"Mul({D}, {X}, {X}, {n});" if q >= 2 else f"Muls({D}, {X}, 1.0f, {n});")
            for _ in range(q - 2):
                e(f"Mul({D}, {D}, {X}, {n});")
            if p < 0:
                c += [f"Duplicate({T[0]}, 1.0f, {n});", f"Div({D}, {T[0]}, {D}, {n});"]
        else:  # exp(p ln x): NaN for x < 0 as in torch, 0 for x = 0 and p > 0
            c += [f"Ln({D}, {X}, {n});", f"Muls({D}, {D}, {flit(p)}, {n});", f"Exp({D}, {D}, {n});"]
    else:
        raise AnalysisError(f"no Ascend C template for the elementwise function {fn!r}")
    return c


BIN_OP = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min"}


def binary_code(fn: str, D: str, A: str | Scalar, B: str | Scalar, n: str) -> list[str]:
    """``D = A fn B`` over ``n`` elements; ``A``/``B`` are tensor views or :class:`Scalar` (not both)."""
    a_s, b_s = isinstance(A, Scalar), isinstance(B, Scalar)
    if not a_s and not b_s:
        return [f"{BIN_OP[fn]}({D}, {A}, {B}, {n});"]
    if a_s and b_s:
        raise AnalysisError("binary op of two scalars inside a vector program")
    if a_s and fn in ("add", "mul", "max", "min"):
        A, B, a_s, b_s = B, A, False, True
    if b_s:
        assert isinstance(B, Scalar)
        if fn == "add":
            return [f"Adds({D}, {A}, {B.expr}, {n});"]
        if fn == "sub":
            return [f"Adds({D}, {A}, {B.neg()}, {n});"]
        if fn == "mul":
            return [f"Muls({D}, {A}, {B.expr}, {n});"]
        if fn == "div":
            return [f"Muls({D}, {A}, {B.recip()}, {n});"]
        if fn == "max":
            return [f"Maxs({D}, {A}, {B.expr}, {n});"]
        return [f"Mins({D}, {A}, {B.expr}, {n});"]
    assert isinstance(A, Scalar)
    if fn == "sub":  # s - x
        return [f"Muls({D}, {B}, {flit(-1.0)}, {n});", f"Adds({D}, {D}, {A.expr}, {n});"]
    # s / x
    return [f"Duplicate({D}, {A.expr}, {n});", f"Div({D}, {D}, {B}, {n});"]


def scalar_binary(fn: str, a: Scalar, b: Scalar) -> Scalar:
    if a.value is not None and b.value is not None:
        v = {"add": a.value + b.value, "sub": a.value - b.value, "mul": a.value * b.value,
             "div": a.value / b.value if b.value else math.inf, "max": max(a.value, b.value),
             "min": min(a.value, b.value)}[fn]
        return Scalar(flit(v), v)
    if fn in ("max", "min"):
        cmp = ">" if fn == "max" else "<"
        return Scalar(f"({a.expr} {cmp} {b.expr} ? {a.expr} : {b.expr})")
    op = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[fn]
    return Scalar(f"({a.expr} {op} {b.expr})")


# ------------------------------------------------------------------------------------ buffer pools


class Pool:
    """Lowest-free-index allocation of same-size UB buffers."""

    def __init__(self) -> None:
        self.busy: set[int] = set()
        self.size = 0

    def take(self) -> int:
        i = 0
        while i in self.busy:
            i += 1
        self.busy.add(i)
        self.size = max(self.size, i + 1)
        return i

    def give(self, i: int) -> None:
        self.busy.discard(i)


REDUCE_OP = {"sum": "Sum", "mean": "Sum", "amax": "Max", "amin": "Min"}
COMBINE_OP = {"sum": "Add", "mean": "Add", "amax": "Max", "amin": "Min"}
IDENTITY = {"sum": "0.0f", "mean": "0.0f", "amax": "(-INFINITY)", "amin": "INFINITY"}

SYNC_VS = ("{ event_t evVS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S)); "
           "SetFlag<HardEvent::V_S>(evVS); WaitFlag<HardEvent::V_S>(evVS); }")


def _indent(lines: list[str], n: int) -> list[str]:
    pad = " " * n
    return [pad + ln if ln else ln for ln in lines]
