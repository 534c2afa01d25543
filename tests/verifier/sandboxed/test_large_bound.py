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
