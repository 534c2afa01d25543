"""Integer inputs planted with boundaries and sentinels (`verifier/sandboxed/integer_inputs.py`): a value is kept
only where the reference runs on it without error and with finite outputs."""
from typing import Callable

import torch
import torch.nn.functional as F

from evokernel.verifier.sandboxed.integer_inputs import LARGE, groups, plant


def accepting(fn: Callable[..., torch.Tensor], calls: list[int] | None = None) -> Callable[[list[torch.Tensor]], bool]:
    """The check the worker gives: ``fn`` runs on the inputs without error, with finite outputs."""
    def accepts(inputs: list[torch.Tensor]) -> bool:
        if calls is not None:
            calls.append(1)
        try:
            out = fn(*inputs)
        except Exception:  # noqa: BLE001
            return False
        return bool(torch.isfinite(out).all())
    return accepts


def drawn(seed: int, n: int = 256, c: int = 10) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    return [torch.randn(n, c), torch.randint(0, c, (n,))]


def test_cross_entropy_gets_its_ignore_index_and_the_boundaries_not_minus_one():
    x, t = drawn(0)
    out = plant([x, t], accepting(F.cross_entropy))
    got = out[1]
    assert int((got == -100).sum()) >= 256 // 16  # the sentinel cross_entropy ignores
    assert not bool((got == -1).any()) and not bool((got == -10).any())  # cross_entropy raises on them
    assert bool((got == 0).any()) and bool((got == 9).any())
    assert out[0] is x  # floating inputs are not this module's
    assert torch.isfinite(F.cross_entropy(*out))
    assert not torch.equal(F.cross_entropy(*out), F.cross_entropy(x, got.clamp(min=0)))  # -100 scored as 0 differs


def test_an_embedding_refuses_every_sentinel_and_python_indexing_keeps_the_negative_ones():
    table = torch.randn(10, 4)
    _, t = drawn(1)
    emb = plant([t], accepting(lambda i: F.embedding(i, table)))[0]
    assert int(emb.min()) >= 0 and bool((emb == 9).any())  # boundaries only
    idx = plant([t], accepting(lambda i: table[i]))[0]
    assert bool((idx == -1).any()) and bool((idx == -10).any())  # -(max + 1) wraps to row 0
    assert not bool((idx == -100).any())  # out of range for 10 rows: the reference raises


def test_the_reference_decides_and_is_asked_once_when_it_takes_everything():
    _, t = drawn(2)
    calls: list[int] = []
    out = plant([t], accepting(lambda i: i.double(), calls))[0]
    assert len(calls) == 1
    assert {-1, -100, -10} <= set(out.tolist())
    calls.clear()
    out = plant([t], accepting(lambda i: F.one_hot(i, 10).double(), calls))[0]  # no negative values
    assert len(calls) == 1 + len(groups(t)) + 1 and int(out.min()) == 0  # + the large magnitudes (int64)
    # a non-finite output refuses the group as an error does
    out = plant([t], accepting(lambda i: torch.where(i == -100, float("nan"), 1.0)))[0]
    assert not bool((out == -100).any()) and bool((out == -1).any())


def test_positions_are_disjoint_share_bounded_and_reproducible_and_the_inputs_are_untouched():
    _, t = drawn(3, n=4096)
    before = t.clone()
    torch.manual_seed(7)
    a = plant([t], accepting(lambda i: i.double()))[0]
    torch.manual_seed(7)
    b = plant([t], accepting(lambda i: i.double()))[0]
    assert torch.equal(a, b) and torch.equal(t, before)
    for s in (-1, -100, -10):
        assert int((a == s).sum()) == 4096 // 16  # one group each, none overwritten by another
    assert int((a != t).sum()) <= 5 * 4096 // 16 + 1  # boundaries, three sentinels, negative indices, one large


def test_what_is_left_alone():
    flags = torch.tensor([True, False, True])
    one = torch.tensor([5])
    u8 = torch.randint(3, 7, (64,), dtype=torch.uint8)
    x = torch.randn(8)
    out = plant([flags, one, u8, x], accepting(lambda *a: torch.zeros(1)))
    assert out[1] is one and out[3] is x
    assert not bool(out[0].any())  # a 1-D mask is one row: the all-False group takes it (bool rows, below)
    assert int(out[2].min()) >= 3 and {3, 6} <= set(out[2].tolist())  # uint8: boundaries only (no negatives)
    # a strided (transposed) integer input keeps its strides
    m = torch.randint(0, 5, (6, 40)).t()
    got = plant([m], accepting(lambda i: i.double()))[0]
    assert got.stride() == m.stride() and bool((got == -100).any())


def test_python_style_negative_indices_are_drawn_between_minus_two_and_minus_max():
    """Red team round 8 (rt8_negative_index_middle): a gather right for -1 and -(max + 1) only passed, since nothing
    else below 0 was planted."""
    table = torch.randn(64, 4)
    seen: set[int] = set()
    for seed in range(4):
        torch.manual_seed(seed)
        t = torch.randint(0, 64, (256,))
        got = plant([t], accepting(lambda i: table[i]))[0]
        middle = {v for v in got.tolist() if -64 < v < -1}
        assert middle and all(-63 <= v <= -2 for v in middle)
        seen |= middle
    assert len(seen) >= 16  # drawn afresh in every trial, not a fixed set
    # refused where the reference refuses them (cross_entropy raises on any negative target but -100)
    x, t = drawn(5)
    ce = plant([x, t], accepting(F.cross_entropy))[1]
    assert int(ce[ce < 0].unique().numel()) == 1 and int(ce.min()) == -100
    # not for a range that is not an index range (values below 0 drawn), nor for max < 2
    signed = torch.randint(-5, 5, (256,))
    assert not any(name == "negative indices" for name, _ in groups(signed))
    assert not any(name == "negative indices" for name, _ in groups(torch.randint(0, 2, (256,))))


def test_sentinels_only_plants_no_boundaries():
    """The distinct trials (integer outputs compared exactly) plant the sentinels but not the drawn minimum and maximum,
    whose repeats make ties (red team round 8: rt8_sentinel_only_in_untied_skip, a count of labels != -100 ignoring
    its labels, passed because sentinels reached only the special trial, whose integer outputs are excused as ties)."""
    torch.manual_seed(0)
    t = torch.randint(0, 1000, (64, 512))
    named = dict(groups(t, sentinels_only=True))
    assert "boundaries" not in named and named["sentinel -100"] == [-100]
    got = plant([t], accepting(lambda i: (i != -100).sum(dim=1).double()), sentinels_only=True)[0]
    assert int((got == -100).sum()) == 64 * 512 // 16
    assert int((got == int(t.max())).sum()) <= int((t == int(t.max())).sum())  # the maximum not repeated
    assert int((got == int(t.min())).sum()) <= int((t == int(t.min())).sum())  # nor the minimum


def test_bool_inputs_get_all_false_and_all_true_rows_where_the_reference_accepts_them():
    """Red team round 8 (rt8_bool_mask_never_empty): a masked mean dividing by the raw count (0/0 on an all-padding
    row) passed, since bool inputs were never planted and rand > 0.5 over 256 positions is never all False."""
    torch.manual_seed(1)
    x, m = torch.randn(128, 256), torch.rand(128, 256) > 0.5

    def masked_mean(x, m):
        w = m.to(x.dtype)
        return (x * w).sum(1) / w.sum(1).clamp(min=1.0)

    got = plant([x, m], accepting(masked_mean))
    assert got[0] is x and not torch.equal(got[1], m)
    kept = got[1].sum(1)
    assert int((kept == 0).sum()) >= 128 // 16 and int((kept == 256).sum()) >= 128 // 16
    assert torch.isfinite(masked_mean(*got)).all()

    def masked_softmax(x, m):  # an all-False row is NaN here: that group is refused, the all-True one kept
        return torch.softmax(x.masked_fill(~m, float("-inf")), dim=1)

    got = plant([x, m], accepting(masked_softmax))[1]
    assert int((got.sum(1) == 0).sum()) == 0 and int((got.sum(1) == 256).sum()) >= 128 // 16
    # a transposed mask keeps its strides; the rows are those of its last dimension
    mt = (torch.rand(256, 128) > 0.5).t()
    got = plant([mt], accepting(lambda a: a.double()))[0]
    assert got.stride() == mt.stride() and bool((got.sum(1) == 0).any())


def test_large_magnitudes_one_per_row_beyond_int32_of_both_signs():
    """Red team round 9 (rt9_int64_accumulated_in_int32): an int64 cumsum accumulated in int32 passed, since no integer
    input ever held a value beyond int32's range. int64 inputs now get magnitudes from 2**31 up to 2**52, int32 ones
    from 2**16 up to 2**29, one per row of the last dimension, both signs, where the reference accepts them."""
    torch.manual_seed(2)
    t = torch.randint(0, 1000, (64, 512))
    for sentinels_only, first in ((False, 1), (True, -1)):
        got = plant([t], accepting(lambda i: i.cumsum(1).double()), sentinels_only=sentinels_only)[0]
        big = got.abs() >= 1 << 31
        per_row = big.sum(dim=1)
        assert int(per_row.max()) == 1 and int(per_row.sum()) >= 32  # ~every row, never two in one
        vals = got[big]
        assert int(vals.abs().max()) <= 1 << 52 and bool((vals > 0).any()) and bool((vals < 0).any())
        assert int((got == -100).sum()) == 64 * 512 // 16  # the other groups' positions untouched
    # int32: 2**16 .. 2**29 (two of them add without leaving int32); int16 and uint8: none
    t32 = torch.randint(0, 1000, (64, 512), dtype=torch.int32)
    got = plant([t32], accepting(lambda i: i.cumsum(1).double()))[0]
    big = got.abs() >= 1 << 16
    assert int(big.sum(dim=1).max()) == 1 and int(got.abs().max()) <= 1 << 29
    assert torch.int16 not in LARGE and torch.uint8 not in LARGE
    t16 = torch.randint(0, 1000, (64, 512), dtype=torch.int16)
    assert int(plant([t16], accepting(lambda i: i.double()))[0].abs().max()) <= 1000


def test_large_magnitudes_are_refused_by_an_index_reference():
    """An index input (an embedding's, a gather's) makes the reference raise on a large value: none is kept, and the
    other groups are judged on their own."""
    table = torch.randn(64, 4)
    torch.manual_seed(3)
    t = torch.randint(0, 64, (128, 32))
    got = plant([t], accepting(lambda i: table[i]))[0]
    assert int(got.max()) <= 63 and int(got.min()) >= -64 and bool((got == -1).any())
