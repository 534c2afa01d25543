"""The value shapes of the trial inputs (`verifier/sandboxed/trial_inputs.py`): the ``special`` trial's planted
signed zeros, large finite values and constant slices."""
from __future__ import annotations

import torch

from evokernel.verifier.sandboxed.trial_inputs import LARGE_MAX, LARGE_MIN, PERTURBATIONS, TINY_MAX, TINY_MIN

special = PERTURBATIONS["special"]


def _draw(shape, dtype=torch.float32, seed=5):
    torch.manual_seed(seed)
    x = torch.randn(shape, dtype=dtype)
    return x, special(x)


def test_special_inputs_hold_signed_zeros_and_large_finite_values_of_both_signs():
    for shape in ((8, 1024), (16, 256), (1000,), (3,), (4, 16, 32, 32)):
        for dtype in (torch.float32, torch.float64):
            x, y = _draw(shape, dtype)
            assert y.shape == x.shape and y.dtype == x.dtype and torch.isfinite(y).all()
            zero = y == 0
            assert (zero & torch.signbit(y)).any() and (zero & ~torch.signbit(y)).any(), shape
            large = y.abs() >= LARGE_MIN
            assert (y >= LARGE_MIN).any() and (len(shape) == 1 or (y <= -LARGE_MIN).any()), shape
            assert float(y.abs().max()) <= LARGE_MAX * 1.0001
            assert torch.isfinite(y.float() ** 2).all()  # squares stay finite in float32
            if len(shape) >= 2:  # at most one large value per row: a row's sum never cancels two
                assert int(large.reshape(-1, shape[-1]).sum(1).max()) == 1
            assert int(zero.sum()) >= max(2, x.numel() // 1024)


def test_special_inputs_hold_no_large_values_in_half_precision():
    for dtype in (torch.float16, torch.bfloat16):
        x, y = _draw((64, 512), dtype)
        assert torch.isfinite(y).all() and float(y.float().abs().max()) < 100
        assert (y == 0).any() and (y.float().std(dim=1) == 0).any()


def test_special_inputs_hold_constant_rows_with_exactly_zero_variance():
    x, y = _draw((64, 256))
    rows = y.std(dim=1) == 0  # 64 // 16 rows
    assert int(rows.sum()) == 4
    r = int(rows.nonzero()[0])
    assert float(y[r].mean()) == float(y[r, 0])  # the mean is exact in float32: (x - mean) is exactly 0
    assert float(y[r].double().var()) == 0.0
    x, y = _draw((8, 16, 16, 16))
    assert (y.reshape(-1, 16).std(dim=1) == 0).sum() == 8 * 16 * 16 // 16  # the last dimension's rows only
    assert (y.reshape(8, -1).std(dim=1) == 0).sum() == 0  # no whole sample (a GroupNorm's answer would be 0)
    assert float((y == x).double().mean()) > 0.8


def test_special_inputs_keep_strides_and_leave_tensors_without_room_alone():
    torch.manual_seed(1)
    x = torch.randn(64, 32).t()  # (32, 64) transposed
    y = special(x)
    assert y.stride() == x.stride() and (y == 0).any() and (y.abs() >= LARGE_MIN).any()
    assert (y.std(dim=1) == 0).any()  # the slice along the first dimension
    x, y = _draw((4, 4, 64))  # dimensions under 8: no whole slice (it would be a quarter of the tensor)
    assert (y.reshape(4, -1).std(dim=1) > 0).all() and (y.transpose(0, 1).reshape(4, -1).std(dim=1) > 0).all()
    assert int((y.reshape(-1, 64).std(dim=1) == 0).sum()) == 1
    assert special(torch.empty(0)).numel() == 0
    ints = torch.arange(10)
    assert special(ints) is ints


def test_special_inputs_come_from_the_seeded_generator():
    a = _draw((32, 128), seed=9)[1]
    b = _draw((32, 128), seed=9)[1]
    c = _draw((32, 128), seed=10)[1]
    assert torch.equal(a, b) and not torch.equal(a, c)


distinct = PERTURBATIONS["distinct"]


def test_special_inputs_hold_tiny_normal_values_of_both_signs():
    """Red team round 5: a sigmoid answering 0 for every non-zero |x| < 1e-20 passed (randn never lands there)."""
    for make in (special, distinct):
        for dtype in (torch.float32, torch.float64):
            torch.manual_seed(3)
            y = make(torch.randn(64, 512, dtype=dtype))
            tiny = (y != 0) & (y.abs() < 1e-9)
            assert (tiny & (y > 0)).any() and (tiny & (y < 0)).any()
            assert float(y[tiny].abs().min()) >= TINY_MIN * 0.9999 and float(y[tiny].abs().max()) <= TINY_MAX * 1.0001
            assert float(y[tiny].abs().min()) >= torch.finfo(torch.float32).tiny  # no subnormals
        torch.manual_seed(3)
        half = make(torch.randn(64, 512, dtype=torch.float16)).float()  # 1e-30 is 0 in float16: none planted
        assert not ((half != 0) & (half.abs() < 1e-9)).any()


def test_distinct_inputs_plant_the_special_values_without_ties():
    """Integer outputs are compared exactly on these inputs: no constant rows, at most one zero (+0.0 == -0.0) and one
    large value per row of the last dimension, tiny and large values from continuous ranges."""
    for shape in ((64, 512), (8, 16, 256), (1000,)):
        torch.manual_seed(7)
        x = torch.randn(shape)
        y = distinct(x)
        assert y.shape == x.shape and torch.isfinite(y).all() and float((y == x).double().mean()) > 0.99
        rows = y.reshape(-1, shape[-1])
        zero, large = rows == 0, rows.abs() >= LARGE_MIN
        assert zero.any() and large.any() and int(zero.sum(1).max()) == 1 and int(large.sum(1).max()) == 1
        assert (y > LARGE_MIN).any()
        if len(shape) > 1:
            assert (y < -LARGE_MIN).any() and (rows.std(dim=1) > 0).all()
        changed = y != x
        assert int(changed.sum()) == int(torch.unique(y[changed]).numel()) or int(zero.sum()) > 1
    torch.manual_seed(7)
    assert torch.equal(distinct(torch.randn(32, 128)), (torch.manual_seed(7), distinct(torch.randn(32, 128)))[1])
    ints = torch.arange(10)
    assert distinct(ints) is ints
