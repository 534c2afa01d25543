"""The parent-side comparison: tolerances, NaN, degenerate outputs, reductions, feedback."""
import pytest
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


# --- reductions: tight enough to catch sampling, loose enough for float accumulation (issue 13, class 5) ---
from evokernel.verifier.trusted.correctness import FP_NOISE, Exact, RTOL_REDUCTION, is_reduction  # noqa: E402


def _mse(pred, target):
    return ((pred.double() - target.double()) ** 2).mean().float().reshape(())


def test_a_subsampled_mse_fails_and_float_accumulation_passes():
    g = torch.Generator().manual_seed(3)
    pred, target = torch.randn(4096, 512, generator=g), torch.randn(4096, 512, generator=g)
    ref = _mse(pred, target)
    sampled = _mse(pred[::12], target[::12])  # 1 row in 12: ~0.1-0.3% off, inside the old 1% tolerance
    assert compare(sampled, ref, [pred, target], 1e-2).ok  # the old rule (not a reduction) let it through
    assert not compare(sampled, ref, [pred, target], 1e-2, reduction=True).ok
    from evokernel.verifier.trusted.failures import Fail
    from evokernel.verifier.trusted.trials import compare_outputs

    with pytest.raises(Fail):  # the verifier decides "reduction" from the sizes: a scalar of 2M inputs
        compare_outputs("trial 1", [sampled], [ref], [pred, target], 1e-2)
    naive = torch.zeros((), dtype=torch.float32)  # float accumulation in blocks: honest rounding error
    for block in ((pred - target) ** 2).reshape(-1).split(1 << 16):
        naive += block.sum()
    naive = naive / pred.numel()
    assert compare(naive.reshape(()), ref, [pred, target], 1e-2, reduction=True).ok


def test_which_outputs_are_reductions():
    assert is_reduction(1, 10) and is_reduction(16, 16)  # scalars and tiny outputs
    assert is_reduction(1024, 1024 * 64) and not is_reduction(1024, 1024 * 63)
    assert not is_reduction(1 << 20, 1 << 20)  # elementwise


def test_row_sums_with_cancellation_are_judged_norm_wise_not_per_element():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(4096, 1024, generator=g)
    ref = x.sum(-1)
    honest = torch.stack([r.double().sum() for r in x]).float()  # different order, some near-zero rows
    assert compare(honest, ref, [x], 1e-2, reduction=True).ok
    # positive rows: every other element, doubled, lands within 1% of each row sum
    x = torch.randn(512, 16384, generator=g).abs() + 1
    exact, ref = x.double().sum(-1), x.sum(-1)
    honest = torch.stack([r.double().sum() for r in x]).float()
    strided = (x[:, ::2].double().sum(-1) * 2).float()
    assert compare(strided, ref, [x], 1e-2).ok  # the old rule let it through
    cmp = compare(strided, ref, [x], 1e-2, reduction=True, truth=lambda: exact)
    assert not cmp.ok and "aggregates many inputs" in cmp.message and "float64" in cmp.message
    assert quick_match(honest, ref, 1e-2, reduction=True) and not quick_match(strided, ref, 1e-2, reduction=True)


def test_where_float32_itself_drifts_the_float64_answer_decides():
    # a sum with heavy cancellation: float32 PyTorch is far (relatively) from the exact result, so an honest
    # candidate can miss the float32 reference by more than 1e-4 and still be as good as PyTorch
    exact = torch.tensor(1e-3, dtype=torch.float64)
    ref = torch.tensor(1e-3 * (1 + 4e-3), dtype=torch.float32)  # float32 PyTorch: 0.4% off
    honest = torch.tensor(1e-3 * (1 - 3e-3), dtype=torch.float32)  # as far off, the other way
    assert not compare(honest, ref, [], 1e-2, reduction=True).ok  # no float64 opinion: refused
    assert compare(honest, ref, [], 1e-2, reduction=True, truth=lambda: exact).ok
    far = torch.tensor(1e-3 * (1 + FP_NOISE * 4e-3 * 1.5), dtype=torch.float32)
    assert not compare(far, ref, [], 1e-2, reduction=True, truth=lambda: exact).ok
    assert RTOL_REDUCTION == 1e-4


def test_an_output_that_is_exactly_zero_is_judged_against_float64_not_float32_noise():
    # KernelBench level2 23: the mean of a group-normalised tensor is 0; float32 PyTorch answers ~1e-8 noise
    g = torch.Generator().manual_seed(11)
    exact = torch.zeros(16, dtype=torch.float64)
    ref = (torch.randn(16, generator=g) * 3e-8).float()
    honest = (torch.randn(16, generator=g) * 3e-8).float()  # other noise of the same size
    cmp = compare(honest, ref, [], 1e-2, reduction=True)
    assert not cmp.ok and "norm-wise relative error" in cmp.message  # float32 alone cannot tell
    cmp = compare(honest, ref, [], 1e-2, reduction=True, truth=lambda: exact)
    assert cmp.ok and "float64" in cmp.message
    # an answer far from zero is still refused, and says how far it is from the exact answer
    wrong = (torch.randn(16, generator=g) * 3e-5).float()
    cmp = compare(wrong, ref, [], 1e-2, reduction=True, truth=lambda: exact)
    assert not cmp.ok and "float64" in cmp.message
    # and all zeros stays degenerate (the attack the norm-wise rule exists for)
    assert not compare(torch.zeros(16), ref, [], 1e-2, reduction=True, truth=lambda: exact).ok
    # a non-reduction output: the float64 opinion uses the ordinary tolerance
    ref = (torch.randn(4096, generator=g) * 1e-9).float()
    assert compare((torch.randn(4096, generator=g) * 1e-9).float(), ref, [], 1e-2,
                   truth=lambda: torch.zeros(4096, dtype=torch.float64)).ok


def test_heavy_trial_inputs_have_dominant_rows_and_elements():
    from evokernel.verifier.sandboxed.trial_inputs import PERTURBATIONS

    torch.manual_seed(11)
    x = torch.randn(1000, 256)
    h = PERTURBATIONS["heavy"](x)
    assert h.shape == x.shape and h.dtype == x.dtype and not torch.equal(h, x)
    ratio = (h / x).reshape(1000, 256)
    rows = (ratio.median(dim=1).values > 8).sum().item()
    assert 10 <= rows <= 30  # ~2% of the rows scaled by 16-64
    spikes = ((ratio > 90) & (ratio.median(dim=1, keepdim=True).values < 8)).sum().item()
    assert 100 <= spikes <= 260  # ~0.1% of the elements scaled by 100-1000 (a few land on scaled rows)
    assert torch.equal(PERTURBATIONS["heavy"](torch.zeros(3)), torch.zeros(3))


def _group_norm_mean(x: torch.Tensor, groups: int, plain: bool = False, drop: int = 0) -> torch.Tensor:
    """KernelBench level2 23's tail: GroupNorm, then the mean over everything but the batch. ``plain``: the way
    the template's kernel computes it (float32 running sums, normalisation folded into ``x * scale + shift``);
    ``drop``: statistics without the last ``drop`` elements of each group (an estimate, not the operator)."""
    if not plain:
        return torch.nn.functional.group_norm(x, groups).mean(dim=(1, 2, 3, 4))
    b = x.shape[0]
    g = x.reshape(b, groups, -1)
    sub = g[:, :, : g.shape[-1] - drop]
    n = sub.shape[-1]
    mean = sub.cumsum(-1)[..., -1] / n  # sequential float32 accumulation
    var = ((sub - mean[..., None]) ** 2).cumsum(-1)[..., -1] / n
    scale = 1 / torch.sqrt(var + 1e-5)
    y = g * scale[..., None] + (-mean * scale)[..., None]
    return (y.reshape(b, -1).double().sum(-1) / y[0].numel()).float()


def test_an_output_at_float32_noise_gets_the_working_scale_floor():
    # KernelBench level2 23 (shifted trial inputs): the exact answer is ~1e-9; float32 PyTorch is one draw of
    # rounding noise, and an honest plainer order of operations can land 9 times farther on this draw
    from evokernel.verifier.sandboxed.op_recorder import ScaleRecorder

    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 8, 4, 6, 6, generator=g) + 3
    ref = _group_norm_mean(x, 4)
    rec = ScaleRecorder()
    rec.note(x.double())
    with rec:
        exact_t = torch.nn.functional.group_norm(x.double(), 4).mean(dim=(1, 2, 3, 4))
    assert 3 < rec.scale < 3.3  # the input's RMS, ~sqrt(1 + 3^2): the largest tensor the forward touches
    exact = Exact(exact_t, rec.scale)
    plain = _group_norm_mean(x, 4, plain=True)
    e_ref, e_plain = float((ref.double() - exact_t).norm()), float((plain.double() - exact_t).norm())
    assert e_plain > FP_NOISE * e_ref  # the old rule (FP_NOISE x PyTorch's draw) refused it
    assert not compare(plain, ref, [], 1e-2, reduction=True, truth=lambda: exact_t).ok
    cmp = compare(plain, ref, [], 1e-2, reduction=True, truth=lambda: exact)
    assert cmp.ok and "float64" in cmp.message
    # statistics that skip one element of each group's 576: within atol, far outside rounding noise
    skipped = _group_norm_mean(x, 4, plain=True, drop=1)
    cmp = compare(skipped, ref, [], 1e-2, reduction=True, truth=lambda: exact)
    assert not cmp.ok and "float64" in cmp.message
    # a small but well conditioned output (float32 PyTorch within the bound) gets no floor: 10% off is refused
    small = x.mean(dim=(1, 2, 3, 4)) * 1e-9
    exact_small = Exact(x.double().mean(dim=(1, 2, 3, 4)) * 1e-9, rec.scale)
    assert not compare(small * 1.1, small, [], 1e-2, reduction=True, truth=lambda: exact_small).ok
    assert compare(small, small, [], 1e-2, reduction=True, truth=lambda: exact_small).ok
