"""Constant initialisers drawn at random and random initialisers widened (`verifier/sandboxed/init_perturbation.py`):
the same values on both sides of a verdict whenever ModelNew builds the same layers, torch's global stream consumed
as without them, torch restored after."""
import torch
import torch.nn as nn

from evokernel.verifier.sandboxed.init_perturbation import drawn_constants


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
    assert float((torch.isclose(ratio, torch.full_like(ratio, factor), rtol=1e-5)).double().mean()) > 0.99
    assert not torch.equal(build_layers(12).fc.weight, a.fc.weight)  # another secret seed, other values


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
