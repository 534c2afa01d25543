"""The reference's resolution of its own answer (large_bound.resolves) and the levels of the planted large values
(trial_inputs.planted_level)."""
import torch

from evokernel.verifier.sandboxed.large_bound import MARGIN, resolves
from evokernel.verifier.sandboxed.trial_inputs import (LARGE_CAP, LARGE_LEVELS, LARGE_MIN, PERTURBATIONS, large_max,
                                                       planted_level)

TOLS = {"float32": [1e-2, 1e-4], "float64": [1e-9, 1e-10], "float16": [1e-2, 1e-4], "bfloat16": [1e-2, 1e-4]}


def test_an_answer_float32_gives_is_resolved():
    x = torch.randn(64, 256, dtype=torch.float64)
    assert resolves([x.float(), torch.arange(4)], [x, torch.arange(4)], TOLS)
    inf = x.clone()
    inf[0, 0], inf[1, 1] = float("inf"), float("nan")
    assert resolves([inf.float()], [inf], TOLS)  # NaN/Inf where float64 has them too


def test_an_element_float32_misses_is_not_resolved():
    x = torch.randn(64, 256, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    x[3, 7] = 0.0  # the element moved: its norm-wise share stays far inside the bound
    off = x.float().clone()
    off[3, 7] += 2 * 1e-2 / MARGIN * (1 + abs(float(x[3, 7])))  # one element beyond a MARGIN-th of the tolerance
    assert not resolves([off], [x], TOLS)
    near = x.float().clone()
    near[3, 7] += 0.5 * 1e-2 / MARGIN * (1 + abs(float(x[3, 7])))  # within it
    assert resolves([near], [x], TOLS)
    drift = (x * (1 + 2e-4 / MARGIN)).float()  # every element within the elementwise bound, norm-wise beyond
    assert not resolves([drift], [x], TOLS)


def test_overflow_in_float32_only_and_changed_integers_are_not_resolved():
    x = torch.randn(8, 8, dtype=torch.float64)
    over = x.float().clone()
    over[2, 2] = float("inf")  # float32 overflowed where float64 did not
    assert not resolves([over], [x], TOLS)
    assert not resolves([torch.tensor([1, 2])], [torch.tensor([1, 3])], TOLS)  # an argmax the rounding flipped
    assert not resolves([x.float()], [x, x], TOLS)
    assert not resolves([x.float()[:4]], [x], TOLS)


def test_levels_narrow_the_range_and_keep_the_draw():
    assert LARGE_LEVELS[0] == 1.0 and list(LARGE_LEVELS) == sorted(LARGE_LEVELS, reverse=True)
    tops = []
    for level in range(len(LARGE_LEVELS)):
        with planted_level(level):
            tops.append(large_max(torch.float32, 16))
    assert tops[0] == LARGE_CAP[torch.float32] and tops == sorted(tops, reverse=True) and tops[-1] > LARGE_MIN
    assert large_max(torch.float32, 16) == tops[0]  # the block restores level 0
    with planted_level(99):
        assert large_max(torch.float32, 16) == tops[-1]  # clamped to the last level
    x = torch.randn(64, 512)
    drawn = {}
    for level in (0, 3):
        torch.manual_seed(5)
        with planted_level(level):
            drawn[level] = PERTURBATIONS["special"](x)
    big0, big3 = drawn[0].abs() >= LARGE_MIN, drawn[3].abs() >= LARGE_MIN * 0.999
    assert int(big0.sum()) >= 16 and torch.equal(big0, big3)  # the same positions (stratified, same seed)
    assert float(drawn[3].abs().max()) <= tops[3] * 1.001 < float(drawn[0].abs().max())
    assert torch.equal(torch.sign(drawn[0][big0]), torch.sign(drawn[3][big3]))
    # everything else as drawn, but the planted half-integers, whose top follows the level's (trial_inputs.HALF_TOP)
    other = ~big0 & (drawn[0] != drawn[3])
    assert bool(((drawn[0][other] * 2) % 2 == 1).all()) and bool(((drawn[3][other] * 2) % 2 == 1).all())
    assert int(other.sum()) < int((~big0).sum()) // 100


def test_rounding_variants_move_each_element_by_a_few_units_and_nothing_else():
    from evokernel.verifier.sandboxed.large_bound import JITTER, jittered

    x = torch.randn(32, 64)
    x[0, :4] = torch.tensor([0.0, -0.0, float("inf"), float("nan")])
    h = torch.randn(8, 8).half()
    idx = torch.arange(10)
    state = torch.get_rng_state()
    a, b = jittered([x, h, idx, 3.5], 1), jittered([x, h, idx, 3.5], 2)
    assert torch.equal(torch.get_rng_state(), state)  # torch's stream untouched: the trial's draw stays the same
    assert a[2] is idx and a[3] == 3.5 and a[0].dtype == x.dtype and a[1].dtype == torch.float16
    assert torch.equal(a[0][0, :3], x[0, :3]) and torch.signbit(a[0][0, 1]) and torch.isnan(a[0][0, 3])
    finite = torch.isfinite(x)
    rel = ((a[0] - x).abs() / x.abs().clamp_min(1e-30))[finite]
    assert float(rel.max()) <= (JITTER + 1) * torch.finfo(torch.float32).eps
    assert float((a[0] != x)[finite].float().mean()) > 0.5  # most elements get a new rounding
    assert not torch.equal(a[0][finite], b[0][finite])  # and each variant another one
    assert torch.equal(jittered([x], 1)[0][finite], a[0][finite])  # deterministic per variant


def test_the_accumulation_forward_moves_contractions_and_sums_as_far_as_a_sequential_float32_sum():
    from evokernel.verifier.sandboxed.large_bound import Accumulation

    eps = torch.finfo(torch.float32).eps / 2
    g = torch.Generator().manual_seed(5)
    lin = torch.nn.Linear(256, 64).double()
    x = torch.randn(8, 256, dtype=torch.float64, generator=g)
    x[0, 3] = 1e3  # a planted large value: row 0's products are ~1e3 times the others
    img, w = torch.randn(2, 3, 9, 9, dtype=torch.float64, generator=g), torch.randn(5, 3, 3, 3, dtype=torch.float64)
    with torch.no_grad():
        clean = [lin(x), torch.nn.functional.conv2d(img, w), x.sum(-1), torch.relu(x), torch.softmax(x, -1)]
        with Accumulation():
            moved = [lin(x), torch.nn.functional.conv2d(img, w), x.sum(-1), torch.relu(x), torch.softmax(x, -1)]
    with torch.no_grad():
        bounds = [(x.abs() @ lin.weight.abs().T) * 256 ** 0.5 * eps,
                  torch.nn.functional.conv2d(img.abs(), w.abs()) * 27 ** 0.5 * eps,
                  x.abs().sum(-1) * 256 ** 0.5 * eps]
    for c, m, bound in zip(clean, moved, bounds):
        d = (m - c).abs()
        assert bool((d <= bound * (1 + 1e-9)).all()) and float(d.max()) > 0.1 * float(bound.max())
    row0, rest = (moved[0] - clean[0])[0].abs().max(), (moved[0] - clean[0])[1:].abs().max()
    assert row0 > 4 * rest  # the row holding the large value moves with it
    assert torch.equal(moved[3], clean[3]) and torch.equal(moved[4], clean[4])  # elementwise and softmax: as they are
    with torch.no_grad(), Accumulation():
        y32 = lin.float()(x.float())
    with torch.no_grad():
        assert torch.equal(y32, lin(x.float()))  # float32 forwards are not the probe's: untouched
