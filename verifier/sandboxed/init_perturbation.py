"""Runs INSIDE the sandbox (reference and candidate workers alike): constant initialisers drawn at random.

A model whose layers start from constants -- a norm's weight 1 and bias 0 (``nn.init.ones_``/``zeros_`` in its
``reset_parameters``), its running mean 0 and variance 1 (``reset_running_stats``), ``nn.init.constant_`` --
can compute an output that is degenerate under those values: KernelBench level2 23's GroupNorm then mean is
exactly 0, a kernel that hard-codes weight 1 and bias 0 is right. The verifier therefore builds both models
once more under `drawn_constants` for one trial and for the timing: while a model is constructed, every
constant initialiser fills its (floating) tensor with values drawn around the constant instead:

* ``ones_`` -> +-U(0.5, 1.5), the sign drawn per element; ``zeros_`` -> U(-0.5, 0.5); ``constant_(t, v)`` ->
  v * +-U(0.5, 1.5) (U(-0.5, 0.5) for v = 0);
* a norm's ``running_mean`` -> U(-0.5, 0.5), ``running_var`` -> U(0.5, 1.5) (positive: a variance),
  ``num_batches_tracked`` stays 0.

Both signs, because a trained norm's weight takes both: a kernel that applies |gamma|, or moves a max-pool before a
BatchNorm's per-channel affine (max(a x + b) = a max(x) + b holds only for a >= 0), was right under every
positive draw (red team round 6). The magnitude stays in [0.5, 1.5]: never 0 (a zero weight would hide what it
multiplies) and never far from the default's scale.

Both sides must get the same values although their constructors are different code. The values therefore do
not come from torch's global stream: its position would then depend on how many constant initialisers each
side calls, and the random layers drawn from it (convolutions, linears) would stop agreeing. Each call draws
from its own generator, seeded by the secret seed, the initialiser's kind, the tensor's shape and how many
calls of that kind and shape came before: ModelNew gets the Model's values when it builds the same layers in
the same order, the contract that makes their random weights agree already. Values a constructor sets itself
(``torch.ones``, ``fill_``, ``copy_``) are not touched.

In a candidate's construction the guard (init_guard.py) trusts these initialisers as it trusts nn.init's (their
arithmetic, a sign and ``0.5 + |u|``, is the verifier's, not values the candidate chose): ``drawn_constants`` is entered before
the guard, which finds them in place by identity (`active_initialisers`).
"""
from __future__ import annotations

import contextlib
import hashlib
from typing import Any, Iterator

import torch
from torch.nn import init as nn_init
from torch.nn.modules import activation as nn_activation
from torch.nn.modules import batchnorm as nn_batchnorm

# (module, attribute) pairs that hold constant_: activation.py imports it by name (MultiheadAttention's biases)
_CONSTANT_HOLDERS = ((nn_init, "constant_"), (nn_activation, "constant_"))


class _Draws:
    def __init__(self, seed: int):
        self.seed, self.counts = int(seed), {}

    def uniform(self, kind: str, t: torch.Tensor) -> torch.Tensor:
        """U(0, 1) of ``t``'s shape (float64) from the generator of (seed, kind, shape, occurrence)."""
        shape = tuple(t.shape)
        k = self.counts.get((kind, shape), 0)
        self.counts[(kind, shape)] = k + 1
        digest = hashlib.sha256(f"{self.seed}:{kind}:{shape}:{k}".encode()).digest()
        gen = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))
        return torch.rand(shape, generator=gen, dtype=torch.float64)

    def signed(self, kind: str, t: torch.Tensor) -> torch.Tensor:
        """+-U(0.5, 1.5) of ``t``'s shape (float64), the sign drawn per element, from one draw of `uniform`: with
        s = 2u - 1, the sign of s and 0.5 + |s| (|s| is U(0, 1) and independent of the sign)."""
        s = 2.0 * self.uniform(kind, t) - 1.0
        return torch.where(s < 0, -1.0, 1.0).double() * (0.5 + s.abs())


_ACTIVE: set[Any] = set()  # the initialisers of the drawn_constants blocks now active


def active_initialisers() -> frozenset[Any]:
    """The functions `drawn_constants` has put in place of torch's constant initialisers, while it is active: the
    candidate's construction guard trusts them as it trusts nn.init's own (they fill the tensor or the norm's
    running statistics they are given with drawn values, nothing else), by identity, so nothing else can pass for
    one."""
    return frozenset(_ACTIVE)


def _fill(t: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        t.copy_(values.to(t.dtype))
    return t


@contextlib.contextmanager
def drawn_constants(seed: int) -> Iterator[None]:
    """While active, constant initialisers (and the norms' running statistics) draw their values from
    ``seed`` as the module docstring says; on exit torch's own initialisers are back."""
    draws = _Draws(seed)
    ones, zeros = nn_init.ones_, nn_init.zeros_
    constant = nn_init.constant_
    held = {(m, a): getattr(m, a) for m, a in _CONSTANT_HOLDERS}
    reset_stats = nn_batchnorm._NormBase.reset_running_stats

    def drawn_ones(tensor: torch.Tensor) -> torch.Tensor:
        if not tensor.is_floating_point():
            return ones(tensor)
        return _fill(tensor, draws.signed("ones", tensor))

    def drawn_zeros(tensor: torch.Tensor) -> torch.Tensor:
        if not tensor.is_floating_point():
            return zeros(tensor)
        return _fill(tensor, draws.uniform("zeros", tensor) - 0.5)

    def drawn_constant(tensor: torch.Tensor, val: float) -> torch.Tensor:
        if not tensor.is_floating_point() or not isinstance(val, (int, float)):
            return constant(tensor, val)
        if val == 0:
            return _fill(tensor, draws.uniform("constant", tensor) - 0.5)
        return _fill(tensor, val * draws.signed("constant", tensor))

    def drawn_running_stats(self: Any) -> None:
        if not self.track_running_stats:
            return
        _fill(self.running_mean, draws.uniform("running_mean", self.running_mean) - 0.5)
        _fill(self.running_var, 0.5 + draws.uniform("running_var", self.running_var))
        self.num_batches_tracked.zero_()

    nn_init.ones_, nn_init.zeros_ = drawn_ones, drawn_zeros
    for m, a in _CONSTANT_HOLDERS:
        setattr(m, a, drawn_constant)
    nn_batchnorm._NormBase.reset_running_stats = drawn_running_stats
    active = (drawn_ones, drawn_zeros, drawn_constant, drawn_running_stats)
    _ACTIVE.update(active)
    try:
        yield
    finally:
        _ACTIVE.difference_update(active)
        nn_init.ones_, nn_init.zeros_ = ones, zeros
        for (m, a), fn in held.items():
            setattr(m, a, fn)
        nn_batchnorm._NormBase.reset_running_stats = reset_stats
