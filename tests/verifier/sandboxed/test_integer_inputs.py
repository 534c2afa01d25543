"""Integer inputs planted with boundaries and sentinels (`verifier/sandboxed/integer_inputs.py`): a value is kept
only where the reference runs on it without error and with finite outputs."""
from typing import Callable

import torch
import torch.nn.functional as F

from evokernel.verifier.sandboxed.integer_inputs import groups, plant


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
    assert len(calls) == 1 + len(groups(t)) and int(out.min()) == 0
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
    assert int((a != t).sum()) <= 4 * 4096 // 16


def test_what_is_left_alone():
    flags = torch.tensor([True, False, True])
    one = torch.tensor([5])
    u8 = torch.randint(3, 7, (64,), dtype=torch.uint8)
    x = torch.randn(8)
    out = plant([flags, one, u8, x], accepting(lambda *a: torch.zeros(1)))
    assert out[0] is flags and out[1] is one and out[3] is x
    assert int(out[2].min()) >= 3 and {3, 6} <= set(out[2].tolist())  # uint8: boundaries only (no negatives)
    # a strided (transposed) integer input keeps its strides
    m = torch.randint(0, 5, (6, 40)).t()
    got = plant([m], accepting(lambda i: i.double()))[0]
    assert got.stride() == m.stride() and bool((got == -100).any())
