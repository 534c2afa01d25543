"""The parent-side comparison: tolerances, NaN, degenerate outputs, feedback."""
import torch

from evokernel.verifier.trusted.correctness import compare, quick_match

torch.manual_seed(0)
X = torch.randn(64, 128)


def test_exact_and_within_tolerance():
    ref = torch.softmax(X, -1) * 10
    assert compare(ref.clone(), ref, [X], 1e-2).ok
    assert compare(ref * (1 + 5e-3), ref, [X], 1e-2).ok
    assert not compare(ref * (1 + 5e-3), ref, [X], 1e-4).ok  # strict mode


def test_mismatch_feedback_names_index_and_errors():
    ref = X.clone()
    cand = X.clone()
    cand[3, 7] += 1.0
    r = compare(cand, ref, [], 1e-2)
    assert not r.ok
    assert "[3, 7]" in r.message and "max abs err" in r.message
    assert abs(r.max_abs_err - 1.0) < 1e-5


def test_shape_and_dtype_mismatch():
    assert "shape mismatch" in compare(X[:, :10], X, [], 1e-2).message
    assert "dtype mismatch" in compare(X.double(), X, [], 1e-2).message


def test_nan_never_matches():
    cand = X.clone()
    cand[0, 0] = float("nan")
    r = compare(cand, X, [], 1e-2)
    assert not r.ok and "NaN" in r.message
    # a NaN in the reference is not a wildcard either
    ref = X.clone()
    ref[0, 0] = float("nan")
    cand = X.clone()
    assert not compare(cand, ref, [], 1e-2).ok
    assert not compare(torch.full_like(X, float("nan")), torch.full_like(X, float("nan")), [], 1e-2).ok


def test_zeros_do_not_pass_tiny_outputs():
    # KernelBench #165: softmax over a long row gives ~1e-4 values; zeros are within atol=1e-2
    long_rows = torch.randn(8, 16384)
    ref = torch.softmax(long_rows, -1)
    r = compare(torch.zeros_like(ref), ref, [long_rows], 1e-2)
    assert not r.ok and "all zeros" in r.message


def test_constant_and_input_copy_are_degenerate():
    ref = torch.softmax(torch.randn(8, 16384), -1)
    const = torch.full_like(ref, 1.0 / 16384)
    assert "constant" in compare(const, ref, [], 1e-2).message
    # identity on an op that is nearly the identity
    x = torch.randn(64, 64) * 100
    near_identity = x * 1.00001
    assert "copy of input 0" in compare(x.clone(), near_identity, [x], 1e-2).message


def test_normwise_guard():
    ref = torch.randn(1000) * 1e-3  # every element below atol
    cand = ref + 5e-3 * torch.sign(torch.randn(1000))  # elementwise within atol, norm-wise far off
    r = compare(cand, ref, [], 1e-2)
    assert not r.ok and "norm-wise" in r.message


def test_integer_outputs_compare_exactly():
    a = torch.arange(10)
    b = a.clone()
    b[4] = 0
    assert compare(a.clone(), a, [], 1e-2).ok
    assert "differ" in compare(b, a, [], 1e-2).message


def test_quick_match_agrees_with_compare():
    ref = torch.softmax(X, -1) * 10
    for cand in (ref.clone(), ref * 1.5, torch.zeros_like(ref), ref + float("nan")):
        if quick_match(cand, ref, 1e-2):
            assert compare(cand, ref, [], 1e-2).ok


def test_inf_in_reference_needs_the_same_inf():
    ref = X.clone()
    ref[1, 1] = float("inf")
    assert compare(ref.clone(), ref, [], 1e-2).ok
    wrong = ref.clone()
    wrong[1, 1] = 1e30
    assert not compare(wrong, ref, [], 1e-2).ok
    off = ref.clone()
    off[2, 2] += 1.0
    assert not compare(off, ref, [], 1e-2).ok


def test_large_tensors_are_scanned_in_chunks():
    # beyond one chunk: a single bad element, a NaN or an Inf late in the tensor is still found
    ref = torch.randn(3 << 20)
    for bad in (1.0, float("nan"), float("inf")):
        cand = ref.clone()
        cand[-5] += bad
        assert not compare(cand, ref, [], 1e-2).ok
        assert not quick_match(cand, ref, 1e-2)
    ref_nan = ref.clone()
    ref_nan[-7] = float("nan")
    assert not compare(ref_nan.clone(), ref_nan, [], 1e-2).ok
    assert compare(ref * (1 + 1e-3), ref, [ref], 1e-2).ok and quick_match(ref * (1 + 1e-3), ref, 1e-2)
