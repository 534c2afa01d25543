"""Constant initialisers drawn at random and random initialisers widened (`verifier/sandboxed/init_perturbation.py`):
the same values on both sides of a verdict whenever ModelNew builds the same layers, torch's global stream consumed
as without them, torch restored after."""
import torch
import torch.nn as nn

from evokernel.verifier.sandboxed.init_perturbation import ZERO_EVERY, drawn_constants, widen_values


class Net(nn.Module):
    def __init__(self, order: str = "conv-first"):
        super().__init__()
        if order == "conv-first":
            self.conv = nn.Conv2d(3, 8, 3)
            self.gn = nn.GroupNorm(2, 8)
        else:  # the same layers, the norm built first
            self.gn = nn.GroupNorm(2, 8)
            self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.ln = nn.LayerNorm(16)
        self.rms = nn.RMSNorm(16)
        self.prelu = nn.PReLU(8)
        self.attn = nn.MultiheadAttention(16, 2)


def build(seed: int | None, order: str = "conv-first", init_seed: int = 3) -> Net:
    torch.manual_seed(init_seed)
    if seed is None:
        return Net(order)
    with drawn_constants(seed):
        return Net(order)


def test_constants_are_drawn_around_their_defaults():
    net = build(11)
    w, b = net.gn.weight.detach(), net.gn.bias.detach()
    assert 0.5 <= float(w.abs().min()) and float(w.abs().max()) <= 1.5 and len(set(w.tolist())) == 8
    assert -0.5 <= float(b.min()) and float(b.max()) <= 0.5 and float(b.abs().max()) > 0
    assert 0.5 <= float(net.bn.running_var.min()) and float(net.bn.running_var.max()) <= 1.5  # stays positive
    assert -0.5 <= float(net.bn.running_mean.min()) and float(net.bn.running_mean.abs().max()) > 0
    assert int(net.bn.num_batches_tracked) == 0
    for t in (net.ln.weight, net.rms.weight, net.bn.weight):
        assert not torch.equal(t.detach(), torch.ones_like(t))
    assert not torch.equal(net.prelu.weight.detach(), torch.full((8,), 0.25))  # constant_(w, 0.25)
    slope = net.prelu.weight.detach().abs()
    assert 0.125 <= float(slope.min()) and float(slope.max()) <= 0.375  # 0.25 * +-U(0.5, 1.5)
    assert float(net.attn.in_proj_bias.detach().abs().max()) > 0  # constant_(bias, 0.) imported by name
    assert net.gn.weight.requires_grad  # still parameters


def test_both_sides_get_the_same_values_whatever_the_order_of_norm_and_convolution():
    a, b = build(11), build(11)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    # the global stream is not consumed: the convolution is the one built without perturbation, widened alike
    # (test_random_initialisers_are_widened_alike_on_both_sides), and the norm gets the same draws whether it is
    # built before or after it
    norm_first = build(11, order="norm-first")
    assert torch.equal(norm_first.gn.weight, a.gn.weight) and torch.equal(norm_first.conv.weight, a.conv.weight)
    # another secret seed, other values
    assert not torch.equal(build(12).gn.weight, a.gn.weight)


def test_torch_is_restored_and_values_set_by_hand_are_left_alone():
    with drawn_constants(5):
        t = nn.init.ones_(torch.empty(4))
        by_hand = torch.ones(4)
        ints = nn.init.zeros_(torch.empty(3, dtype=torch.int64))
    assert not torch.equal(t, torch.ones(4)) and torch.equal(by_hand, torch.ones(4))
    assert torch.equal(ints, torch.zeros(3, dtype=torch.int64))
    assert torch.equal(nn.init.ones_(torch.empty(4)), torch.ones(4))
    assert torch.equal(nn.GroupNorm(2, 4).weight.detach(), torch.ones(4))
    assert int(nn.BatchNorm1d(4).running_var.sum()) == 4
    try:
        with drawn_constants(5):
            raise RuntimeError("a constructor failed")
    except RuntimeError:
        pass
    assert torch.equal(nn.LayerNorm(4).weight.detach(), torch.ones(4))


def test_weights_and_constants_take_both_signs_variances_stay_positive():
    """Red team round 6: with weights in U(0.5, 1.5) a kernel applying |gamma|, or max-pooling before a BatchNorm's
    affine (right only for gamma >= 0), passed. ones_ and constant_(v) draw +-U(0.5, 1.5) (times v), the sign per
    element; a running variance stays positive."""
    with drawn_constants(3):
        w = nn.init.ones_(torch.empty(4096))
        c = nn.init.constant_(torch.empty(4096), -2.0)
        bn = nn.BatchNorm1d(4096)
    for t, scale in ((w, 1.0), (c, 2.0)):
        mag = t.abs() / scale
        assert 0.5 <= float(mag.min()) and float(mag.max()) <= 1.5
        negative = float((t < 0).double().mean())
        assert 0.45 < negative < 0.55  # a fair sign, per element
        # the magnitude does not depend on the sign: both halves spread over [0.5, 1.5]
        for half in (mag[t < 0], mag[t > 0]):
            assert float(half.min()) < 0.55 and float(half.max()) > 1.45
    assert float(bn.running_var.min()) >= 0.5 and float(bn.weight.detach().min()) < 0 < float(bn.weight.detach().max())
    # small norms see both signs across secret seeds (every channel of a 16-channel BatchNorm is +-1 at 1/2)
    signs = set()
    for seed in range(8):
        with drawn_constants(seed):
            signs |= set(torch.sign(nn.LayerNorm(16).weight.detach()).tolist())
    assert signs == {-1.0, 1.0}


class Layers(nn.Module):
    """The layers whose reset_parameters draw at random: Linear, ConvNd, Embedding, an LSTM, MultiheadAttention (its
    xavier_uniform_ imported by name) and a Transformer layer stack (xavier_uniform_ imported by name too)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 128)
        self.conv = nn.Conv2d(3, 8, 3)
        self.convt = nn.ConvTranspose2d(4, 6, 3)
        self.emb = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(8, 16)
        self.attn = nn.MultiheadAttention(16, 2)
        self.tr = nn.Transformer(16, 2, 1, 1, 32, batch_first=True)
        self.bn = nn.BatchNorm1d(16)


def build_layers(seed: int | None, init_seed: int = 3) -> Layers:
    torch.manual_seed(init_seed)
    if seed is None:
        return Layers()
    with drawn_constants(seed):
        return Layers()


def test_random_initialisers_are_widened_alike_on_both_sides():
    """Red team round 7: nn.Linear's W was only ever drawn in U(+-1/sqrt(in)), so a kernel storing W as fixed point
    saturating at that bound passed. Random initialisers' draws are scaled per call and given outliers, from the
    per-call generator: both sides get the same values, torch's global stream is consumed as before."""
    plain, a, b = build_layers(None), build_layers(11), build_layers(11)
    for (name, x), (_, y), (_, p) in zip(a.state_dict().items(), b.state_dict().items(), plain.state_dict().items()):
        assert torch.equal(x, y), name
        if x.is_floating_point() and not name.startswith("bn.") and "bias" not in name:
            assert not torch.equal(x, p), f"{name} was not widened"
    assert float(a.bn.running_var.min()) >= 0.5  # a variance stays positive
    # the global stream is where it was: what is drawn after construction is the same
    torch.manual_seed(3)
    Layers()
    after_plain = torch.rand(4)
    torch.manual_seed(3)
    with drawn_constants(11):
        Layers()
    assert torch.equal(torch.rand(4), after_plain)
    # the widening is a per-call factor and outliers on top of torch's own draw: most elements are the plain draw
    # times one factor
    ratio = a.fc.weight.detach() / plain.fc.weight.detach()
    factor = float(ratio.median())
    assert 0.25 <= factor <= 4.0
    scaled = torch.isclose(ratio, torch.full_like(ratio, factor), rtol=1e-5)
    zeros = a.fc.weight.detach() == 0  # and exact zeros, about one in ZERO_EVERY (a pruned checkpoint)
    assert float((scaled | zeros).double().mean()) > 0.99
    assert 0.5 / ZERO_EVERY < float(zeros.double().mean()) < 1.5 / ZERO_EVERY
    assert not torch.equal(build_layers(12).fc.weight, a.fc.weight)  # another secret seed, other values


def test_weight_matrices_hold_exact_zeros_alike_on_both_sides_and_vectors_none():
    """Red team round 11 (rt11_pruned_weight_drops_bias): a Linear that dropped the bias of every output whose weight
    row held an exact 0 passed, no drawn weight ever being 0. Random initialisers' draws and the values a constructor
    set of >= 2 dimensions (`widen_values`) hold exact zeros at about one element in ZERO_EVERY, the same on both
    sides; so does a random initialiser's vector of >= 16 elements (a bias: red team round 12's zero_bias_sentinel
    skipped a ReLU where the bias was exactly 0); a norm's constants and tiny tensors none."""
    a, b, plain = build_layers(21), build_layers(21), build_layers(None)
    w = a.fc.weight.detach()
    assert torch.equal(w == 0, b.fc.weight.detach() == 0) and int((w == 0).sum()) >= w.numel() // (2 * ZERO_EVERY)
    assert (w == 0).any(dim=1).float().mean() > 0.5  # most output rows hold one
    assert not (plain.fc.weight == 0).any()  # the default build: as torch draws
    bias = a.fc.bias.detach()
    assert torch.equal(bias == 0, b.fc.bias.detach() == 0) and 0 < int((bias == 0).sum()) <= 128 // ZERO_EVERY
    assert not (a.conv.bias == 0).any()  # 8 elements: fewer than ZERO_MIN
    norms = build(21)
    for name, t in norms.state_dict().items():
        if t.is_floating_point() and t.dim() < 2 and "attn" not in name and "conv" not in name:
            assert not (t == 0).any(), name  # the norms' and PReLU's constants
    gen = torch.Generator().manual_seed(0)
    held = widen_values(torch.ones(32, 8), gen)
    assert 0 < int((held == 0).sum()) <= 32 * 8 // ZERO_EVERY
    assert not (widen_values(torch.ones(32, 8), torch.Generator().manual_seed(0), positive=True) == 0).any()
    assert not (widen_values(torch.ones(2, 4), torch.Generator().manual_seed(0)) == 0).any()  # < ZERO_MIN elements
    assert not (widen_values(torch.ones(64), torch.Generator().manual_seed(0)) == 0).any()  # a constructor's vector


def test_weights_leave_their_initial_bound_in_every_draw():
    """Every widened tensor holds values beyond its initial bound (the outliers: at least one per tensor, about one
    element in 1024, 2 to 8 times the draw's largest), whatever the factor; the factor itself spans [1/4, 4]."""
    bound = 1 / 16  # nn.Linear(256, ...): U(+-1/sqrt(256))
    factors = []
    for seed in range(12):
        torch.manual_seed(0)
        plain = nn.Linear(256, 128)
        torch.manual_seed(0)
        with drawn_constants(seed):
            fc = nn.Linear(256, 128)
        w, b = fc.weight.detach(), fc.bias.detach()
        assert float(w.abs().max()) > bound and float(b.abs().max()) > bound, seed
        assert 32 // 2 <= int((w.abs() > 1.9 * float((w / plain.weight.detach()).median().abs()) * bound).sum()) <= 32
        factors.append(float((w / plain.weight.detach()).median()))
    assert min(factors) < 1 < max(factors) and 0.25 <= min(factors) and max(factors) <= 4.0
    # both signs among the outliers, and a one-element tensor is widened too
    with drawn_constants(1):
        one = nn.init.uniform_(torch.empty(1), -1.0, 1.0)
        many = nn.init.normal_(torch.empty(1 << 16))
    assert float(one.abs()) > 1.0
    big = many[many.abs() > 1.9 * float(many.abs().kthvalue(many.numel() - 64).values)]
    assert float(big.min()) < 0 < float(big.max())


def test_init_guard_trusts_the_widened_initialisers():
    """The candidate's construction runs under drawn_constants (entered first, as the worker does) and the guard: the
    widened initialisers, nn.init's and those imported by name (MultiheadAttention, Transformer), run trusted, so
    300 layers cost no Python-chosen values and the values are the reference's (built without the guard)."""
    from evokernel.verifier.sandboxed.init_guard import PYTHON_CAP, guarded_construction

    torch.manual_seed(3)
    with drawn_constants(11), guarded_construction() as guard:
        model = Layers()
        many = nn.ModuleList(nn.Linear(4, 4) for _ in range(PYTHON_CAP + 44))
    guard.audit(model)
    guard.audit(many)
    assert guard.violations == {} and guard.python_values < 16, (guard.violations, guard.python_values)
    reference = build_layers(11)
    for (name, x), (_, y) in zip(model.state_dict().items(), reference.state_dict().items()):
        assert torch.equal(x, y), name


def test_random_initialisers_are_restored():
    from torch.nn.modules import activation, transformer

    held = (nn.init.kaiming_uniform_, nn.init.uniform_, activation.xavier_uniform_, transformer.xavier_uniform_)
    try:
        with drawn_constants(5):
            assert nn.init.kaiming_uniform_ is not held[0]
            raise RuntimeError("a constructor failed")
    except RuntimeError:
        pass
    assert (nn.init.kaiming_uniform_, nn.init.uniform_, activation.xavier_uniform_, transformer.xavier_uniform_) == held
    torch.manual_seed(0)
    w = nn.Linear(256, 8).weight.detach()
    assert float(w.abs().max()) <= 1 / 16


# --- values a constructor set itself (red team round 8): widened after construction, alike on both sides -----------

class ReferenceNorms(nn.Module):
    """The spellings of the shipped tasks: a weight made by the constructor (RMSNorm), a LayerNorm's drawn affine
    overwritten by copy_ and by a write through .data (which moves no version counter), a zero bias, a BatchNorm
    whose running statistics are copied in, a tied parameter, and layers left as their initialisers drew them."""

    def __init__(self, d: int = 256):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(d))
        self.bias = nn.Parameter(torch.zeros(d))
        self.ln = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.bn = nn.BatchNorm1d(d)
        self.fc = nn.Linear(d, 8)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(d))
            self.ln.bias.copy_(0.5 * torch.randn(d))
            self.bn.running_mean.copy_(torch.randn(d))
            self.bn.running_var.fill_(2.0)
        self.ln2.weight.data.fill_(1.0)
        self.rms = nn.RMSNorm(d)
        self.tied = self.weight


class CandidateNorms(nn.Module):
    """The same values built by other code: other names, another registration order (the zero bias and the ones
    weight swapped), float64 where the reference holds float32, the tie left out."""

    def __init__(self, d: int = 256):
        super().__init__()
        self.b = nn.Parameter(torch.zeros(d))
        self.w = nn.Parameter(torch.ones(d, dtype=torch.float64))
        self.s = nn.Parameter(1.0 + 0.5 * torch.randn(d))
        self.norm = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.bn = nn.BatchNorm1d(d)
        self.fc = nn.Linear(d, 8)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(d))
            self.norm.bias.copy_(0.5 * torch.randn(d))
            self.bn.running_mean.copy_(torch.randn(d))
            self.bn.running_var.fill_(2.0)
        self.norm2.weight.data.fill_(1.0)
        self.rms = nn.RMSNorm(d)


def built(cls: type, seed: int | None, widen: bool = True, init_seed: int = 3) -> tuple[nn.Module, list[str]]:
    torch.manual_seed(init_seed)
    if seed is None:
        return cls(), []
    with drawn_constants(seed) as draws:
        model = cls()
    return model, (draws.widen_held(model) if widen else [])


def test_values_a_constructor_set_are_widened_alike_on_both_sides():
    """Red team round 8: nn.Parameter(torch.ones(d)), 1 + 0.5 * randn and a LayerNorm's affine overwritten by copy_
    were never widened, so a kernel saturating the weight at a few times its default range passed. After
    construction every floating parameter (and norm statistic) no drawn initialiser left as it is gets widened, from
    a generator keyed by its values: the candidate's other names, order and dtype get the reference's values."""
    ref, names = built(ReferenceNorms, 11)
    cand, cand_names = built(CandidateNorms, 11)
    assert sorted(names) == sorted(["weight", "scale", "bias", "ln.weight", "ln.bias", "ln2.weight",
                                    "bn.running_mean", "bn.running_var"]), names
    assert len(cand_names) == len(names)  # the tie is one tensor: widened once
    assert ref.tied is ref.weight
    pairs = [(ref.weight, cand.w), (ref.bias, cand.b), (ref.scale, cand.s), (ref.ln.weight, cand.norm.weight),
             (ref.ln.bias, cand.norm.bias), (ref.ln2.weight, cand.norm2.weight), (ref.ln2.bias, cand.norm2.bias),
             (ref.bn.running_mean, cand.bn.running_mean), (ref.bn.running_var, cand.bn.running_var),
             (ref.bn.weight, cand.bn.weight), (ref.rms.weight, cand.rms.weight), (ref.fc.weight, cand.fc.weight)]
    for i, (x, y) in enumerate(pairs):
        assert x.dtype != y.dtype or torch.equal(x, y), i
        assert torch.equal(x.detach(), y.detach().to(x.dtype)), i
    # another secret seed, other values
    other, _ = built(ReferenceNorms, 12)
    assert not torch.equal(other.weight, ref.weight) and not torch.equal(other.ln.weight, ref.ln.weight)


def test_widened_values_leave_the_default_range_in_every_draw():
    """ones -> both signs, never 0; zeros -> never 0; 1 + 0.5 * randn -> an outlier beyond twice its largest whatever
    the factor (a kernel saturating at 4 is wrong in every draw); a running variance stays positive."""
    for seed in range(16):
        plain, _ = built(ReferenceNorms, None)
        ref, _ = built(ReferenceNorms, seed)
        w, b, s = ref.weight.detach(), ref.bias.detach(), ref.scale.detach()
        assert float(w.min()) < 0 < float(w.max()) and float(w.abs().min()) > 0, seed
        assert float(b.abs().min()) > 0, seed
        top = float(plain.scale.detach().abs().max())
        assert float(s.abs().max()) >= 2 * top > 4, seed
        assert float(ref.ln.weight.detach().abs().max()) >= 2 * float(plain.ln.weight.detach().abs().max()), seed
        assert float(ref.bn.running_var.min()) > 0, seed
        assert not torch.equal(ref.ln2.weight.detach(), torch.ones(256)), seed  # the .data write is seen


def test_tensors_the_drawn_initialisers_left_as_they_are_are_not_widened_again():
    """nn.LayerNorm's drawn affine, nn.Linear's widened draw and nn.RMSNorm's weight keep the values drawn_constants
    gave them: widened once."""
    ref, _ = built(ReferenceNorms, 11)
    unwidened, _ = built(ReferenceNorms, 11, widen=False)
    for name in ("rms.weight", "fc.weight", "fc.bias", "bn.weight", "bn.bias", "ln2.bias"):
        assert torch.equal(ref.get_parameter(name), unwidened.get_parameter(name)), name
    assert not torch.equal(ref.scale, unwidened.scale)


def test_a_candidate_that_escapes_the_widening_disagrees_with_the_reference():
    """The attacker's move: keep the weight where the rule does not look (a buffer, a plain attribute) so the kernel
    sees the default range. Its values are then not the reference's widened ones: the perturbed trial refuses it."""
    class Escaping(nn.Module):
        def __init__(self, d: int = 256):
            super().__init__()
            self.register_buffer("weight", torch.ones(d))
            self.plain = torch.ones(d)

    ref, _ = built(ReferenceNorms, 11)
    esc, widened = built(Escaping, 11)
    assert widened == [] and torch.equal(esc.weight, torch.ones(256)) and torch.equal(esc.plain, torch.ones(256))
    assert not torch.equal(esc.weight, ref.weight.detach())


def test_the_widening_is_trusted_under_the_guard_and_works_on_any_dtype():
    """The candidate's construction runs under drawn_constants and the guard (as the worker does); the widening runs
    after it; bfloat16/float16 parameters and a one-element parameter are widened too, integers left alone."""
    from evokernel.verifier.sandboxed.init_guard import guarded_construction

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = nn.Parameter(torch.ones(8, dtype=torch.float16))
            self.bf = nn.Parameter(torch.ones(8, dtype=torch.bfloat16))
            self.alpha = nn.Parameter(torch.tensor(0.5))
            self.n = nn.Parameter(torch.ones(4, dtype=torch.int64), requires_grad=False)
            self.ln = nn.LayerNorm(8)

    torch.manual_seed(3)
    with drawn_constants(11) as draws, guarded_construction() as guard:
        model = Mixed()
    guard.audit(model)
    assert guard.violations == {}
    assert sorted(draws.widen_held(model)) == ["alpha", "bf", "h"]
    assert not torch.equal(model.h, torch.ones(8, dtype=torch.float16)) and float(model.alpha.detach().abs()) > 0.5
    assert torch.equal(model.n, torch.ones(4, dtype=torch.int64))
    ref, _ = built(Mixed, 11)  # the reference builds it without the guard: the same values
    for (name, x), (_, y) in zip(model.state_dict().items(), ref.state_dict().items()):
        assert torch.equal(x, y), name


def test_drawn_layers_cast_or_laid_out_again_by_the_candidate_are_not_widened_again():
    """An honest ModelNew may cast a drawn layer (``.half()``, ``.double()``) or lay its weight out again
    (``weight.data = w.t().contiguous()``) in its constructor: the values are still the drawn ones, in another order or
    dtype, and must not be widened on its side only (the reference's drawn layer is not)."""
    class Ref(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 32)
            self.ln = nn.LayerNorm(32)

    class Cand(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 32)
            self.ln = nn.LayerNorm(32)
            self.fc.weight.data = self.fc.weight.data.t().contiguous()
            self.ln.half()

    ref, _ = built(Ref, 11)
    cand, widened = built(Cand, 11)
    assert widened == []
    assert torch.equal(cand.fc.weight.t(), ref.fc.weight) and torch.equal(cand.ln.weight, ref.ln.weight.half())
    # a constructor-set weight copied elsewhere is still widened: its values are no drawn ones
    assert "weight" in built(ReferenceNorms, 11)[1]


class _Buffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(32))
        self.register_buffer("shift", torch.zeros(32))
        self.register_buffer("mask", torch.tril(torch.ones(8, 8)))  # structure: two values
        self.register_buffer("idx", torch.ones(4, dtype=torch.long))  # not floating
        self.register_buffer("ninf", torch.full((4,), float("-inf")))  # not finite
        self.bn = nn.BatchNorm1d(32)


class _BuffersOtherOrder(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(32)
        self.register_buffer("mask", torch.tril(torch.ones(8, 8)))
        self.register_buffer("b", torch.zeros(32, dtype=torch.float64))
        self.register_buffer("s", torch.ones(32))


def test_constant_buffers_are_widened_alike_on_both_sides_only_when_asked():
    """Red team round 10: a ones-initialised scale buffer never read passed, buffers never being varied. With
    ``buffers`` every floating buffer holding one finite value everywhere is widened (keyed by content: other names,
    order and dtype get the same values); a mask of several values, integer and non-finite buffers stay."""
    from evokernel.verifier.sandboxed.init_perturbation import constant_buffer
    assert constant_buffer(torch.ones(3)) and constant_buffer(torch.zeros(2, 2)) and not constant_buffer(torch.tril(
        torch.ones(3, 3))) and not constant_buffer(torch.ones(3, dtype=torch.long)) and not constant_buffer(
        torch.full((2,), float("nan"))) and not constant_buffer(torch.empty(0))
    torch.manual_seed(3)
    with drawn_constants(21) as draws:
        ref = _Buffers()
    draws.widen_held(ref, buffers=True)
    assert sorted(draws.buffers_widened) == ["scale", "shift"]
    torch.manual_seed(3)
    with drawn_constants(21) as draws2:
        cand = _BuffersOtherOrder()
    draws2.widen_held(cand, buffers=True)
    assert torch.equal(ref.scale, cand.s) and torch.equal(ref.shift, cand.b.float())
    assert bool((ref.scale != 1).all()) and bool((ref.shift != 0).all())
    assert torch.equal(ref.mask, torch.tril(torch.ones(8, 8))) and torch.equal(ref.idx, torch.ones(4, dtype=torch.long))
    assert torch.equal(ref.bn.running_var, cand.bn.running_var)
    torch.manual_seed(3)
    with drawn_constants(21) as draws3:
        plain = _Buffers()
    draws3.widen_held(plain)  # without buffers: as before
    assert draws3.buffers_widened == [] and bool((plain.scale == 1).all())
