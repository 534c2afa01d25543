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
the same order, the contract that makes their random weights agree already.

Values a constructor sets itself are widened after it: ``nn.Parameter(torch.ones(d))`` (the usual RMSNorm),
``nn.Parameter(1 + 0.5 * torch.randn(d))``, a LayerNorm's drawn affine overwritten by ``copy_`` or through ``.data``
were never touched, so a kernel saturating the weight at a few times its default range was right in every trial
(red team round 8). After both models are built (`_Draws.widen_held`, called by the worker), every floating
parameter (a tied one once) and every norm's running mean and variance is widened in place by `widen_values` unless
it still holds, bit for bit and where a drawn initialiser left them, the values that initialiser drew (a hash of its
bytes, kept with the tensor at each fill: a write by any path -- ``copy_``, ``.data.fill_``, numpy, native code --
changes it, where the version counter sees only some), or holds them elsewhere in any order and dtype (an
order-free fingerprint of the drawn values rounded to each floating dtype: an honest constructor that casts a drawn
layer, ``.half()``, or lays its weight out again, ``weight.data = w.t().contiguous()``, is not widened on its side
only). The widening: each element times +-U(0.5, 1.5), the sign
per element (a zero counts as half the largest magnitude: nothing stays 0), all times a factor log-uniform in
[1/`SCALE`, `SCALE`], and about one element in `OUTLIER_EVERY` (at least one) +-U(`OUTLIER_LOW`, `OUTLIER_HIGH`)
times the largest magnitude before or after the factor, so beyond every value the constructor made whatever the
factor; a running variance keeps magnitudes only (positive). The two sides' constructors are different code, so
the draw is keyed by content, not by call order: the generator of (seed, shape, a hash of the values as float64
with -0.0 as 0.0, how many held tensors of that shape and those values came before, in ``named_parameters``
order). ModelNew gets the Model's values whatever it names its parameters, in whatever order it registers tensors
of different values, in float32 or float64; tensors of equal values (two ``torch.ones(d)`` weights) take their
draws in registration order. A value the candidate keeps where the rule does not look (a buffer, a plain
attribute) is not widened on its side while the reference's is: the two disagree and the trial refuses it.
Buffers other than a norm's statistics (masks, position tables) are left as they are: they are the task's
structure, not trained state.

Random initialisers are drawn wider. Left as they are, a weight never leaves its initial range (nn.Linear's W in
U(+-1/sqrt(in))), and a kernel storing W as saturating fixed point scaled to that bound was right in every trial
while wrong for most trained checkpoints (red team round 7). While a model is constructed, every random
initialiser (`RANDOM_INITIALISERS`: ``uniform_``, ``normal_``, ``trunc_normal_``, ``kaiming_*``, ``xavier_*``,
which the layers' own ``reset_parameters`` call: Linear, ConvNd, Embedding, RNN/LSTM/GRU, MultiheadAttention,
Transformer) draws as torch does, from torch's global stream as before, and the result is then

* multiplied by a factor drawn per call, log-uniform in [1/`SCALE`, `SCALE`] (median 1: a deep stack of layers
  keeps its scale on average rather than growing by a fixed ratio per layer), and
* given outliers: about one element in `OUTLIER_EVERY` (at least one) set to +-U(`OUTLIER_LOW`, `OUTLIER_HIGH`)
  times the largest magnitude the draw had, so every drawn tensor holds values well beyond its initial bound;
* and exact zeros at about one element in `ZERO_EVERY` (tensors of >= `ZERO_MIN` elements), as a pruned or quantised
  checkpoint holds them (`widen_values` too, in tensors of >= 2 dimensions only).

The factor, the outliers' positions, signs and sizes come from the per-call generator below, never from torch's
stream, so both sides get the same values when they build the same layers in the same order. A call nested in
another (an initialiser that calls one of these) is not scaled twice.

In a candidate's construction the guard (init_guard.py) trusts these initialisers as it trusts nn.init's (their
arithmetic, a sign and ``0.5 + |u|``, is the verifier's, not values the candidate chose): ``drawn_constants`` is entered before
the guard, which finds them in place by identity (`active_initialisers`). Modules that imported an initialiser by
name (activation.py: MultiheadAttention; transformer.py) get a forwarder that calls ``nn.init``'s attribute at call
time, so there too the call goes through the guard's trusted wrapper.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
from typing import Any, Iterator

import torch
from torch.nn import init as nn_init
from torch.utils import _python_dispatch
from torch.nn.modules import activation as nn_activation
from torch.nn.modules import batchnorm as nn_batchnorm

from torch.nn.modules import transformer as nn_transformer

# (module, attribute) pairs that hold constant_: activation.py imports it by name (MultiheadAttention's biases)
_CONSTANT_HOLDERS = ((nn_init, "constant_"), (nn_activation, "constant_"))

# the random initialisers whose draws are widened (nn.init's names), and the modules that imported one by name
RANDOM_INITIALISERS = ("uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
                       "xavier_uniform_", "xavier_normal_")
_RANDOM_HOLDERS = ((nn_activation, "xavier_uniform_"), (nn_activation, "xavier_normal_"),
                   (nn_transformer, "xavier_uniform_"))
SCALE = 4.0  # a drawn tensor is scaled by a factor log-uniform in [1/SCALE, SCALE]
OUTLIER_EVERY = 1024  # one element in this many (at least one per tensor) becomes an outlier
OUTLIER_LOW, OUTLIER_HIGH = 2.0, 8.0  # an outlier's magnitude, times the draw's largest
# exact zeros (a pruned or quantised checkpoint): in a tensor of >= `ZERO_MIN` elements (a random initialiser's: any
# dimension; a constructor's own values: >= 2 dimensions), about one element in ZERO_EVERY (drawn with replacement,
# after the outliers) is set to +0.0. Red team round 11: a Linear whose
# "pruned row" path skipped the bias of every output whose weight row held an exact 0 passed, no drawn weight being 0.
# Not in a constructor's own vectors (a norm's weight of 0 hides what it multiplies; constant initialisers are drawn
# in +-[0.5, 1.5]) nor whole rows (a pruned output channel is a constant channel, whose BatchNorm answer is an honest
# kernel's rounding noise amplified by 1/sqrt(eps))
ZERO_EVERY = 16
ZERO_MIN = 16


def _zero_positions(t: torch.Tensor, gen: torch.Generator, vectors: bool = False) -> torch.Tensor | None:
    """Where `ZERO_EVERY`'s exact zeros go in ``t`` (flat positions, drawn from ``gen``), or None (fewer than
    `ZERO_MIN` elements; 1-D unless ``vectors``: a random initialiser's vector is a bias, whose exact zeros a kernel
    must treat as any value -- red team round 12: a Linear+ReLU that skipped the ReLU where the bias was exactly 0
    passed -- while a vector a constructor set itself may be a norm's weight, where a 0 hides what it multiplies)."""
    n = t.numel()
    if (t.dim() < 2 and not vectors) or n < ZERO_MIN:
        return None
    return torch.randint(0, n, (n // ZERO_EVERY,), generator=gen)


def _place(t: torch.Tensor) -> tuple[Any, ...]:
    """Where ``t``'s values live (storage, offset, shape, strides)."""
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride())


def _bits(t: torch.Tensor) -> str:
    """A hash of ``t``'s bytes: a write by any path (``copy_``, ``.data.fill_``, numpy, native code) changes it, where
    the version counter sees only some."""
    return hashlib.sha256(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()).hexdigest()


_MIX = (0x9E3779B97F4A7C15 - 2**64, 0xBF58476D1CE4E5B9 - 2**64)  # odd 64-bit constants (as signed int64)
_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _multiset(t: torch.Tensor, dtype: torch.dtype) -> tuple[int, int]:
    """An order-free fingerprint of ``t``'s values rounded to ``dtype``: (count, a wrapping sum of each value's mixed
    bits). A transposed, re-laid-out or cast copy of drawn values (``weight.data = w.t().contiguous()``, ``.half()``,
    channels_last) has the fingerprint of the drawn values rounded to its dtype."""
    x = t.detach().to(dtype).to(torch.float64).reshape(-1) + 0.0
    b = x.view(torch.int64)
    b = (b ^ (b >> 31)) * _MIX[0]
    b = (b ^ (b >> 29)) * _MIX[1]
    return x.numel(), int((b ^ (b >> 32)).sum())


def constant_buffer(b: Any) -> bool:
    """A floating buffer whose elements all hold one finite value (a scale of ones, a shift of zeros): a default a
    checkpoint replaces, widened with `_Draws.widen_held` (``buffers``) in the perturbed-parameter trials (red team
    round 10: a kernel ignoring a ones-initialised scale buffer passed). Buffers of several values (a causal mask of
    0/1, a position table, an arange) are the task's structure and stay as they are: an honest kernel may compute
    them rather than read them."""
    if not isinstance(b, torch.Tensor) or not b.is_floating_point() or b.numel() == 0 or b.is_meta:
        return False
    first = b.detach().reshape(-1)[0]
    return bool(torch.isfinite(first)) and bool((b.detach() == first).all())


class _Draws:
    def __init__(self, seed: int):
        self.seed, self.counts = int(seed), {}
        self.buffers_widened: list[str] = []  # the last widen_held's buffers (other than a norm's statistics)
        # place -> (a hash of the values a drawn initialiser left there, the tensor: held so its memory is not reused)
        self.drawn: dict[tuple[Any, ...], tuple[str, torch.Tensor]] = {}
        self.content_counts: dict[tuple[Any, ...], int] = {}
        self.multisets: set[tuple[torch.dtype, int, int]] = set()  # the drawn values, rounded to each dtype

    def mark(self, t: torch.Tensor) -> None:
        """Note that ``t`` now holds values drawn here (`widen_held` leaves it as it is, unless written since)."""
        # the verifier's own arithmetic on what it drew: outside the candidate's construction guard (which would count
        # it as the candidate's compute), like the fill it follows
        with _python_dispatch._disable_current_modes():
            self.drawn[_place(t)] = (_bits(t), t)
            self.multisets.update((d, *_multiset(t, d)) for d in _DTYPES if t.numel())

    def marked(self, t: torch.Tensor) -> torch.Tensor:
        self.mark(t)
        return t

    def is_drawn(self, t: torch.Tensor) -> bool:
        """``t`` holds values a drawn initialiser left, where it left them or copied elsewhere in any order and dtype."""
        mark = self.drawn.get(_place(t))
        if mark is not None and mark[0] == _bits(t):
            return True
        return t.dtype in _DTYPES and (t.dtype, *_multiset(t, t.dtype)) in self.multisets

    def content_generator(self, t: torch.Tensor) -> torch.Generator:
        """The generator of (seed, ``t``'s shape, a hash of its values, how many held tensors of that shape and those
        values came before): both sides' constructors are different code, but a tensor they made alike holds the same
        values, whatever its name, dtype or the order of the others."""
        x = t.detach().to(torch.float64).contiguous() + 0.0  # -0.0 and 0.0 alike; float32/float64 alike
        content = hashlib.sha256(x.numpy().tobytes()).hexdigest()
        shape = tuple(t.shape)
        k = self.content_counts.get((shape, content), 0)
        self.content_counts[(shape, content)] = k + 1
        digest = hashlib.sha256(f"{self.seed}:held:{shape}:{content}:{k}".encode()).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))

    def widen_held(self, model: Any, buffers: bool = False) -> list[str]:
        """After both models are built: every floating parameter of ``model`` (and a norm's running statistics) that no
        drawn initialiser filled, or that the constructor wrote since (``nn.Parameter(torch.ones(d))``,
        ``1 + 0.5 * torch.randn(d)``, ``weight.copy_(...)``), is widened in place by `widen_values`; returns their
        names. Parameters in ``named_parameters`` order (a tied one once), then the norms' statistics; with
        ``buffers``, then every other floating buffer that holds one finite value in every element (`constant_buffer`:
        a scale of ones, a shift of zeros -- a default a checkpoint overwrites), in ``named_buffers`` order."""
        if not isinstance(model, torch.nn.Module):
            return []
        held: list[tuple[str, torch.Tensor, bool]] = [
            (name, p, False) for name, p in model.named_parameters()]
        stats: set[int] = set()
        for mname, m in model.named_modules():
            if isinstance(m, nn_batchnorm._NormBase) and m.track_running_stats:
                for bname, positive in (("running_mean", False), ("running_var", True)):
                    b = getattr(m, bname, None)
                    if isinstance(b, torch.Tensor):
                        held.append((f"{mname}.{bname}".lstrip("."), b, positive))
                        stats.add(id(b))
        if buffers:
            extra = [(name, b, False) for name, b in model.named_buffers()
                     if id(b) not in stats and constant_buffer(b) and not self.is_drawn(b)]
            held.extend(extra)
            self.buffers_widened = [name for name, _, _ in extra]
        widened, done = [], set()
        for name, t, positive in held:
            if (not t.is_floating_point() or t.numel() == 0 or t.is_meta or id(t) in done or self.is_drawn(t)):
                continue
            done.add(id(t))
            with torch.no_grad():
                t.copy_(widen_values(t.detach(), self.content_generator(t), positive).to(t.dtype))
            widened.append(name)
        return widened

    def generator(self, kind: str, t: torch.Tensor) -> torch.Generator:
        """The generator of (seed, kind, ``t``'s shape, how many calls of that kind and shape came before)."""
        shape = tuple(t.shape)
        k = self.counts.get((kind, shape), 0)
        self.counts[(kind, shape)] = k + 1
        digest = hashlib.sha256(f"{self.seed}:{kind}:{shape}:{k}".encode()).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))

    def uniform(self, kind: str, t: torch.Tensor) -> torch.Tensor:
        """U(0, 1) of ``t``'s shape (float64) from the generator of (seed, kind, shape, occurrence)."""
        return torch.rand(tuple(t.shape), generator=self.generator(kind, t), dtype=torch.float64)

    def signed(self, kind: str, t: torch.Tensor) -> torch.Tensor:
        """+-U(0.5, 1.5) of ``t``'s shape (float64), the sign drawn per element, from one draw of `uniform`: with
        s = 2u - 1, the sign of s and 0.5 + |s| (|s| is U(0, 1) and independent of the sign)."""
        s = 2.0 * self.uniform(kind, t) - 1.0
        return torch.where(s < 0, -1.0, 1.0).double() * (0.5 + s.abs())

    def widen(self, t: torch.Tensor) -> None:
        """Scale the drawn ``t`` in place and give it outliers, as the module docstring says, from the generator of
        (seed, "random", shape, occurrence): the factor, then the outliers' positions (drawn with replacement), then
        their signs and sizes."""
        gen = self.generator("random", t)
        n = t.numel()
        if n == 0:
            return
        factor = SCALE ** (2.0 * float(torch.rand(1, generator=gen, dtype=torch.float64)) - 1.0)
        k = max(1, n // OUTLIER_EVERY)
        where = torch.randint(0, n, (k,), generator=gen)
        v = 2.0 * torch.rand(2, k, generator=gen, dtype=torch.float64) - 1.0
        with torch.no_grad():
            t.mul_(factor)
            top = float(t.abs().max()) or factor  # an all-zero draw: outliers of the factor's size
            size = (OUTLIER_LOW + (OUTLIER_HIGH - OUTLIER_LOW) * v[1].abs()) * top
            values = (torch.where(v[0] < 0, -1.0, 1.0).double() * size).to(t.dtype)
            flat = t.view(-1) if t.is_contiguous() else t.reshape(-1).clone()
            flat[where] = values
            zeros = _zero_positions(t, gen, vectors=True)
            if zeros is not None:
                flat[zeros] = 0.0
            if not t.is_contiguous():
                t.copy_(flat.view(t.shape))


def widen_values(t: torch.Tensor, gen: torch.Generator, positive: bool = False) -> torch.Tensor:
    """``t``'s values as a trained checkpoint might hold them (float64): each element times +-U(0.5, 1.5) (the sign
    drawn per element; a zero element counts as half the largest magnitude, so none stays 0 by chance), all of them times a
    factor log-uniform in [1/`SCALE`, `SCALE`], then about one element in `OUTLIER_EVERY` (at least one) set to
    +-U(`OUTLIER_LOW`, `OUTLIER_HIGH`) times the largest magnitude before or after the factor, then (>= 2
    dimensions) exact zeros at about one element in `ZERO_EVERY` (`_zero_positions`). ``positive`` (a running
    variance): magnitudes only, no zeros. A tensor holding NaN or Inf is left as it is."""
    x = t.to(torch.float64).reshape(-1)
    n = x.numel()
    top = float(x.abs().max()) if n else 0.0
    if not math.isfinite(top):
        return t.to(torch.float64)
    top = top or 1.0
    s = 2.0 * torch.rand(n, generator=gen, dtype=torch.float64) - 1.0
    factor = SCALE ** (2.0 * float(torch.rand(1, generator=gen, dtype=torch.float64)) - 1.0)
    k = max(1, n // OUTLIER_EVERY)
    where = torch.randint(0, n, (k,), generator=gen)
    v = 2.0 * torch.rand(2, k, generator=gen, dtype=torch.float64) - 1.0
    base = torch.where(x != 0, x, 0.5 * top)
    sign = torch.ones_like(s) if positive else torch.where(s < 0, -1.0, 1.0).double()
    y = (base.abs() if positive else base) * sign * (0.5 + s.abs()) * factor
    # the largest before or after the factor: an outlier lies beyond every value the constructor made, whatever
    # the factor (a kernel saturating at a few times the default's range is wrong in every draw)
    size = (OUTLIER_LOW + (OUTLIER_HIGH - OUTLIER_LOW) * v[1].abs()) * max(top, float(y.abs().max()))
    y[where] = (size if positive else torch.where(v[0] < 0, -1.0, 1.0).double() * size)
    zeros = None if positive else _zero_positions(t, gen)
    if zeros is not None:
        y[zeros] = 0.0
    return y.view(t.shape)


_ACTIVE: set[Any] = set()  # the initialisers of the drawn_constants blocks now active


def active_initialisers() -> frozenset[Any]:
    """The functions `drawn_constants` has put in place of torch's constant initialisers (and of its random ones, which
    it widens), while it is active: the candidate's construction guard trusts them as it trusts nn.init's own (they
    fill the tensor or the norm's running statistics they are given with drawn values, nothing else), by identity,
    so nothing else can pass for one."""
    return frozenset(_ACTIVE)


def _fill(t: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        t.copy_(values.to(t.dtype))
    return t


@contextlib.contextmanager
def drawn_constants(seed: int) -> Iterator[_Draws]:
    """While active, constant initialisers (and the norms' running statistics) draw their values from
    ``seed``, and random initialisers' draws are scaled and given outliers from it, as the module docstring says; on
    exit torch's own initialisers are back."""
    draws = _Draws(seed)
    ones, zeros = nn_init.ones_, nn_init.zeros_
    constant = nn_init.constant_
    held = {(m, a): getattr(m, a) for m, a in _CONSTANT_HOLDERS}
    reset_stats = nn_batchnorm._NormBase.reset_running_stats

    def drawn_ones(tensor: torch.Tensor) -> torch.Tensor:
        if not tensor.is_floating_point():
            return ones(tensor)
        return draws.marked(_fill(tensor, draws.signed("ones", tensor)))

    def drawn_zeros(tensor: torch.Tensor) -> torch.Tensor:
        if not tensor.is_floating_point():
            return zeros(tensor)
        return draws.marked(_fill(tensor, draws.uniform("zeros", tensor) - 0.5))

    def drawn_constant(tensor: torch.Tensor, val: float) -> torch.Tensor:
        if not tensor.is_floating_point() or not isinstance(val, (int, float)):
            return constant(tensor, val)
        if val == 0:
            return draws.marked(_fill(tensor, draws.uniform("constant", tensor) - 0.5))
        return draws.marked(_fill(tensor, val * draws.signed("constant", tensor)))

    def drawn_running_stats(self: Any) -> None:
        if not self.track_running_stats:
            return
        draws.marked(_fill(self.running_mean, draws.uniform("running_mean", self.running_mean) - 0.5))
        draws.marked(_fill(self.running_var, 0.5 + draws.uniform("running_var", self.running_var)))
        self.num_batches_tracked.zero_()

    depth = [0]  # > 0 inside a widened initialiser: a nested one is not widened again

    def widening(name: str) -> Any:
        torch_fn = getattr(nn_init, name)

        def drawn_random(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                result = torch_fn(tensor, *args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0 and isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                draws.widen(tensor)
                draws.mark(tensor)
            return result

        drawn_random.__name__ = drawn_random.__qualname__ = name
        drawn_random.__doc__ = torch_fn.__doc__
        return drawn_random

    def forwarder(name: str) -> Any:
        def forward(*args: Any, **kwargs: Any) -> Any:  # nn.init's attribute now: the guard's wrapper, if any
            return getattr(nn_init, name)(*args, **kwargs)

        forward.__name__ = forward.__qualname__ = name
        return forward

    randoms = {name: getattr(nn_init, name) for name in RANDOM_INITIALISERS}
    held_randoms = {(m, a): getattr(m, a) for m, a in _RANDOM_HOLDERS}
    widened = {name: widening(name) for name in RANDOM_INITIALISERS}

    nn_init.ones_, nn_init.zeros_ = drawn_ones, drawn_zeros
    for m, a in _CONSTANT_HOLDERS:
        setattr(m, a, drawn_constant)
    for name, fn in widened.items():
        setattr(nn_init, name, fn)
    for m, a in _RANDOM_HOLDERS:
        setattr(m, a, forwarder(a))
    nn_batchnorm._NormBase.reset_running_stats = drawn_running_stats
    active = (drawn_ones, drawn_zeros, drawn_constant, drawn_running_stats, *widened.values())
    _ACTIVE.update(active)
    try:
        yield draws
    finally:
        _ACTIVE.difference_update(active)
        nn_init.ones_, nn_init.zeros_ = ones, zeros
        for (m, a), fn in held.items():
            setattr(m, a, fn)
        for name, fn in randoms.items():
            setattr(nn_init, name, fn)
        for (m, a), fn in held_randoms.items():
            setattr(m, a, fn)
        nn_batchnorm._NormBase.reset_running_stats = reset_stats
