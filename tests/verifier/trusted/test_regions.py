"""Parent-side reads of shared regions (`verifier/trusted/regions.py`) and the trial loop's non-finite count: the
faster paths (word-wide byte equality, a sum before an element-wise finiteness scan) answer what the plain ones do."""
from __future__ import annotations

import mmap
from types import SimpleNamespace

import pytest
import torch

from evokernel.verifier.trusted import regions
from evokernel.verifier.trusted.trials import nonfinite


def _region(data: bytes, size: int = 1 << 12) -> SimpleNamespace:
    mm = mmap.mmap(-1, size)
    mm[: len(data)] = data
    return SimpleNamespace(mm=mm)


@pytest.mark.parametrize("nbytes,off1,off2", [(64, 0, 0), (64, 8, 16), (62, 0, 0), (60, 4, 8), (33, 3, 0), (7, 1, 5)])
def test_same_bytes_sees_one_changed_byte_at_any_size_and_alignment(nbytes, off1, off2):
    payload = bytes(range(256))[:nbytes] * 1
    h1, h2 = _region(b"\0" * off1 + payload), _region(b"\0" * off2 + payload)
    m1, m2 = SimpleNamespace(nbytes=nbytes, offset=off1), SimpleNamespace(nbytes=nbytes, offset=off2)
    assert regions.same_bytes(h1, m1, h2, m2)
    for pos in (0, nbytes // 2, nbytes - 1):  # first, middle and last byte, inside any word
        h2.mm[off2 + pos] = (h2.mm[off2 + pos] + 1) % 256
        assert not regions.same_bytes(h1, m1, h2, m2), pos
        h2.mm[off2 + pos] = (h2.mm[off2 + pos] - 1) % 256
    assert not regions.same_bytes(h1, m1, h2, SimpleNamespace(nbytes=nbytes - 1, offset=off2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_nonfinite_counts_what_isfinite_counts(dtype):
    big = torch.finfo(dtype).max
    x = torch.randn(1000).to(dtype)
    assert nonfinite([x]) == 0
    overflowing = torch.full((1000,), big / 2, dtype=dtype)  # every element finite, the sum is not
    assert nonfinite([overflowing]) == 0
    y = x.clone()
    y[3], y[500], y[999] = float("nan"), float("inf"), float("-inf")
    assert nonfinite([y, x, torch.arange(5)]) == 3
    z = x.clone()
    z[0], z[1] = float("inf"), float("-inf")  # the sum is NaN: still counted element by element
    assert nonfinite([z]) == 2
    assert nonfinite([torch.empty(0, dtype=dtype)]) == 0
