"""What the normaliser (:mod:`.normalise`, :mod:`.modules`, :mod:`.calls`) shares: the tables that name the torch
functions, methods and modules it lowers, and the helpers that turn fx values into IR operands.
"""
from __future__ import annotations

import math
from typing import Any

import torch.nn.functional as F
from torch import fx, nn

from evokernel.generators.template.front.graph import Const, Ref

_UNARY_FUNCS = {
    "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "log": "log", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "abs": "abs", "neg": "neg", "silu": "silu", "square": "square",
    "reciprocal": "recip", "relu6": "relu6", "mish": "mish", "selu": "selu", "hardswish": "hardswish",
    "hardsigmoid": "hardsigmoid", "softsign": "softsign", "log1p": "log1p", "expm1": "expm1",
    "erf": "erf", "sin": "sin", "cos": "cos", "logsigmoid": "logsigmoid",
}
_MODULE_UNARY = {
    nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu", nn.ReLU6: "relu6",
    nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid", nn.Mish: "mish", nn.SELU: "selu",
    nn.Softsign: "softsign",
}
_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "div": "div", "maximum": "max",
    "minimum": "min", "pow": "pow", "rsub": "rsub", "multiply": "mul", "subtract": "sub", "divide": "div",
}
_DISPATCHED = {id(F.max_pool2d): "max_pool2d", id(F.max_pool1d): "max_pool1d", id(F.max_pool3d): "max_pool3d",
               id(F.adaptive_max_pool2d): "adaptive_max_pool2d", id(F.adaptive_max_pool1d): "adaptive_max_pool1d",
               id(F.adaptive_max_pool3d): "adaptive_max_pool3d"}
_VIEW_METHODS = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "float", "clone",
                 "view_as", "reshape_as", "to", "detach"}


def _cv(v: Any) -> Any:
    return v.value if isinstance(v, Const) else v


def _wrap(v: Any) -> Any:
    if type(v) is Ref or isinstance(v, Const):
        return v
    if isinstance(v, (bool, int, float)):
        return Const(float(v))
    return v


def _fold(fn: str, a: float, b: float) -> float:
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b if b else math.inf,
            "max": max(a, b), "min": min(a, b), "pow": a ** b}[fn]


def _norm_dim(dim: Any, shape: tuple[int, ...], n: fx.Node, norm: Any) -> int:
    if dim is None:
        raise norm.fail(n, "softmax without an explicit dim")
    return int(_cv(dim)) % len(shape)
