"""Constant initialisers drawn at random (`verifier/sandboxed/init_perturbation.py`): the same values on both
sides of a verdict whenever ModelNew builds the same layers, random layers untouched, torch restored after."""
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


def test_both_sides_get_the_same_values_and_the_random_layers_are_untouched():
    a, b = build(11), build(11)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    # the global stream is not consumed: the convolution is the one built without perturbation, and the
    # norm gets the same draws whether it is built before or after it
    plain, norm_first = build(None), build(11, order="norm-first")
    assert torch.equal(a.conv.weight, plain.conv.weight) and torch.equal(a.conv.bias, plain.conv.bias)
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
