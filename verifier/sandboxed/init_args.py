"""Runs INSIDE the reference sandbox: new values for the constructor's Python float arguments in the
perturbed-parameter trials.

``get_init_inputs()`` gives the constructor's arguments (a LeakyReLU's slope, an eps, a scale factor). Without this
module both models were built with those values in every trial and timed round, so a kernel that ignored one and
hard-coded get_init_inputs()'s value passed (red team round 10, ``rt10_leaky_slope_hardcoded``; round 9 found the
same for forward's float arguments: `scalar_args`).

When the reference worker builds the model of the perturbed-parameter trials (``params_seed`` given), every Python
float among the arguments (top level or in a list/tuple) other than 0.0 and non-finite ones gets its magnitude scaled
by `scalar_args.factor` (1/4 .. 1/1.25 or 1.25 .. 4, never within 25% of the value), its sign kept. The new values
are kept only if **the reference accepts them** (`worker.init`): ``Model`` builds with them and runs on
``get_inputs()`` without an exception and with finite floating outputs; else the model is built with the values as
they were. The parent sends the arguments the reference was built with to the candidate (trials.py), so both sides
get the same values. Ints, bools and strings stay: sizes and flags are structure (docs/verifier.md).

The factors come from a generator of their own seeded by the trial's ``params_seed`` (never torch's global stream,
which the models' random layers draw from after ``torch.manual_seed(seed)``): the same seed gives the same values.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any

import torch

from evokernel.verifier.sandboxed.scalar_args import FACTOR_MAX, FACTOR_MIN


def _generator(params_seed: int) -> torch.Generator:
    digest = hashlib.sha256(f"{int(params_seed)}:init_args".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))


def _factor(gen: torch.Generator) -> float:
    """log-uniform in [FACTOR_MIN, FACTOR_MAX], inverted with probability 1/2 (as `scalar_args.factor`)."""
    u, flip = torch.rand(2, generator=gen, dtype=torch.float64).tolist()
    f = FACTOR_MIN * (FACTOR_MAX / FACTOR_MIN) ** u
    return f if flip < 0.5 else 1.0 / f


def scaled(init_args: list[Any], params_seed: int) -> list[Any]:
    """``init_args`` with every finite non-zero Python float (at any depth of lists and tuples, up to 16) scaled by a
    factor drawn from ``params_seed``'s generator; the list given is not modified. Equal to ``init_args`` when it holds
    no such float."""
    gen = _generator(params_seed)

    def walk(v: Any, depth: int) -> Any:
        if type(v) is float:
            return v * _factor(gen) if v != 0.0 and math.isfinite(v) else v
        if isinstance(v, (list, tuple)) and depth < 16:
            items = [walk(x, depth + 1) for x in v]
            return items if isinstance(v, list) else tuple(items)
        return v

    return [walk(a, 0) for a in init_args]
