"""The parent-side comparison: tolerances, NaN, degenerate outputs, reductions, feedback."""
import math

import pytest
import torch

from evokernel.verifier.trusted.correctness import compare, quick_match

torch.manual_seed(0)
X = torch.randn(64, 128)


def test_exact_and_within_tolerance():
    ref = torch.softmax(X, -1) * 10
    assert compare(ref.clone(), ref, [X], 1e-2).ok
    noise = ref * (1 + 1e-5 * torch.randn(ref.shape, generator=torch.Generator().manual_seed(1)))
    assert compare(noise, ref, [X], 1e-2).ok and compare(noise, ref, [X], 1e-4).ok  # float32 rounding noise
    assert not compare(ref * (1 + 5e-3), ref, [X], 1e-4).ok  # strict mode: 0.5% is outside 1e-4 elementwise
    # every element 0.5% off is inside the elementwise 1e-2 but not float32-accurate (norm-wise 1e-4)
    cmp = compare(ref * (1 + 5e-3), ref, [X], 1e-2)
    assert not cmp.ok and "float32-accurate" in cmp.message


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


def test_nan_where_the_reference_is_finite_fails():
    cand = X.clone()
    cand[0, 0] = float("nan")
    r = compare(cand, X, [], 1e-2)
    assert not r.ok and "NaN" in r.message
    cand[0, 0] = float("inf")
    assert not compare(cand, X, [], 1e-2).ok and not quick_match(cand, X, 1e-2)


def test_nan_and_inf_of_the_reference_must_be_repeated_position_by_position():
    ref = X.clone()
    ref[0, 0], ref[1, 1], ref[2, 2] = float("nan"), float("inf"), float("-inf")
    good = ref.clone()
    r = compare(good, ref, [], 1e-2)
    assert r.ok and r.nonfinite == 3 and quick_match(good, ref, 1e-2)
    for pos, wrong in (((0, 0), 0.0), ((1, 1), 1e30), ((1, 1), float("-inf")), ((1, 1), float("nan")),
                       ((2, 2), float("inf")), ((0, 0), float("inf"))):
        cand = ref.clone()
        cand[pos] = wrong
        r = compare(cand, ref, [], 1e-2)
        assert not r.ok and "position by position" in r.message and f"[{pos[0]}, {pos[1]}]" in r.message, (pos, wrong)
        assert not quick_match(cand, ref, 1e-2)
    # a reference that is NaN everywhere is matched by NaN everywhere (nothing finite to judge), and by nothing else
    nan = torch.full_like(X, float("nan"))
    assert compare(nan.clone(), nan, [], 1e-2).ok
    assert not compare(X.clone(), nan, [], 1e-2).ok


def test_the_finite_elements_of_a_non_finite_reference_are_judged():
    # the old rule skipped a trial whose reference held one NaN/Inf: every finite element went unchecked
    ref = torch.exp(torch.randn(64, 128) * 40)  # overflows to +Inf in places
    assert 0 < int(torch.isinf(ref).sum()) < ref.numel() // 2
    inf = torch.isinf(ref)
    off = ref.clone()
    off[~inf] *= 0.5
    r = compare(off, ref, [], 1e-2)
    assert not r.ok and "outside atol" in r.message and r.nonfinite == int(inf.sum())
    zeros_but_inf = torch.where(inf, ref, torch.zeros_like(ref))
    r = compare(zeros_but_inf, ref, [], 1e-2)
    assert not r.ok and ("outside atol" in r.message or "all zeros" in r.message)
    assert compare(ref * (1 + 1e-5), ref, [], 1e-2).ok  # Inf * (1 + 1e-5) is the same Inf
    assert not compare(ref * (1 + 1e-3), ref, [], 1e-2).ok  # inside 1e-2, not float32-accurate norm-wise
    # small finite values next to a NaN: the norm-wise rule still sees them (zeros are refused)
    tiny = torch.softmax(torch.randn(8, 16384), -1)
    tiny[0, 0] = float("nan")
    cand = torch.zeros_like(tiny)
    cand[0, 0] = float("nan")
    r = compare(cand, tiny, [], 1e-2)
    assert not r.ok and "all zeros" in r.message


def test_zeros_do_not_pass_tiny_outputs():
    # KernelBench #165: softmax over a long row gives ~1e-4 values; zeros are within atol=1e-2
    long_rows = torch.randn(8, 16384)
    ref = torch.softmax(long_rows, -1)
    r = compare(torch.zeros_like(ref), ref, [long_rows], 1e-2)
    assert not r.ok and "all zeros" in r.message


@pytest.mark.parametrize("unit", [1e-24, 1e-40, 1e25])
def test_outputs_of_tiny_or_huge_magnitude_keep_their_norms(unit):
    # red-team round 3 (rt3_tiny_outputs_underflow): float32 squares of values below ~1e-19 flush to zero, so the
    # norm-wise rule and the all-zeros guard had nothing to judge, and x * 1e-30 passed for 1e-24 * tanh(x)
    torch.set_flush_denormal(False)  # 1e-40 is a float32 denormal: not flushed by state another test left behind
    x = torch.randn(64, 4096)
    ref = torch.tanh(x) * unit
    assert compare(ref * (1 + 1e-6), ref, [x], 1e-2).ok  # an honest kernel at this scale
    if unit < 1:
        assert not compare(x * 1e-30, ref, [x], 1e-2).ok
        assert not compare(torch.zeros_like(ref), ref, [x], 1e-2).ok
    else:
        assert not compare(ref * 1.5, ref, [x], 1e-2).ok


def test_constant_and_input_copy_are_degenerate():
    ref = torch.softmax(torch.randn(8, 16384), -1)
    const = torch.full_like(ref, 1.0 / 16384)
    assert "constant" in compare(const, ref, [], 1e-2).message
    # identity on an op that is nearly the identity
    x = torch.randn(64, 64) * 100
    near_identity = x * 1.00001
    assert "copy of input 0" in compare(x.clone(), near_identity, [x], 1e-2).message


def test_a_constant_answer_is_not_degenerate_where_float32_only_scatters_around_it():
    # found by CI (KernelBench level2/23, Conv3d -> GroupNorm -> mean): in a perturbed-parameter trial the
    # GroupNorm weight is one random constant, so every row's answer is the bias; float32 PyTorch scatters
    # ~1e-8 around it, and a kernel whose sums happened to round to exactly the bias was refused as a constant
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 8, 4, 8, 8, generator=g)
    w, b = torch.full((8,), -1.7), torch.full((8,), -0.108559)

    def op(t):
        return torch.nn.functional.group_norm(t, 4, w.to(t.dtype), b.to(t.dtype)).mean(dim=(1, 2, 3, 4))

    ref, exact = op(x), op(x.double())
    assert float(ref.max() - ref.min()) > 0  # float32's rounding scatter
    const = torch.full_like(ref, float(exact[0]))
    cmp = compare(const, ref, [x], 1e-2, reduction=True, truth=lambda: Exact(exact))
    assert cmp.ok, cmp.message
    assert not compare(const, ref, [x], 1e-2, reduction=True).ok  # without float64's opinion: still refused
    # the constant must carry the answer: one off by 1e-4 relative (inside the elementwise tolerance) is refused
    off = torch.full_like(ref, float(exact[0]) * (1 + 1e-4))
    assert not compare(off, ref, [x], 1e-2, reduction=True, truth=lambda: Exact(exact)).ok
    # red team round 9 (rt9_tiny_constant_beats_zero_guard): where the answer is 0 (a LayerNorm's row mean), a
    # tiny constant that never read the input is not "the answer": still degenerate
    ln = torch.nn.functional.layer_norm
    ref0, exact0 = ln(x.reshape(16, -1), (x[0].numel(),)).mean(-1), ln(x.double().reshape(16, -1), (x[0].numel(),)).mean(-1)
    tiny = torch.full_like(ref0, 1e-12)  # 1e-30 squares to 0 in float32: the all-zeros guard catches that one
    cmp0 = compare(tiny, ref0, [x], 1e-2, reduction=True, truth=lambda: Exact(exact0))
    assert not cmp0.ok and "constant" in cmp0.message, cmp0.message
    # where the answer varies (a per-channel weight), float64 varies as float32 does and a constant is refused
    w2 = torch.linspace(0.5, 2.0, 8)

    def op2(t):
        return torch.nn.functional.group_norm(t, 4, w2.to(t.dtype), b.to(t.dtype)).mean(dim=(1, 2, 3, 4))

    ref2, exact2 = op2(x), op2(x.double())
    const2 = torch.full_like(ref2, float(exact2.mean()))
    if compare(const2, ref2, [x], 1e-2, reduction=True).message.find("outside") < 0:
        cmp2 = compare(const2, ref2, [x], 1e-2, reduction=True, truth=lambda: Exact(exact2))
        assert not cmp2.ok and "constant" in cmp2.message, cmp2.message


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
    ref_nan[-7] = float("nan")  # in the last chunk: repeated, it passes; a finite value there does not
    assert compare(ref_nan.clone(), ref_nan, [], 1e-2).ok and quick_match(ref_nan.clone(), ref_nan, 1e-2)
    assert not compare(ref.clone(), ref_nan, [], 1e-2).ok and not quick_match(ref.clone(), ref_nan, 1e-2)
    late = ref_nan.clone()
    late[(1 << 20) + 3] += 1.0  # an error in another chunk than the NaN's
    assert not compare(late, ref_nan, [], 1e-2).ok and not quick_match(late, ref_nan, 1e-2)
    assert compare(ref * (1 + 1e-5), ref, [ref], 1e-2).ok and quick_match(ref * (1 + 1e-5), ref, 1e-2)
    # inside 1e-2 elementwise, not float32-accurate: neither the full rule nor the timed calls' fast path
    assert not compare(ref * (1 + 1e-3), ref, [ref], 1e-2).ok and not quick_match(ref * (1 + 1e-3), ref, 1e-2)


# --- reductions: tight enough to catch sampling, loose enough for float accumulation (issue 13, class 5) ---
from evokernel.verifier.trusted.correctness import FP_NOISE, Exact, RTOL_REDUCTION, is_reduction  # noqa: E402


def _mse(pred, target):
    return ((pred.double() - target.double()) ** 2).mean().float().reshape(())


def test_a_subsampled_mse_fails_and_float_accumulation_passes():
    g = torch.Generator().manual_seed(3)
    pred, target = torch.randn(4096, 512, generator=g), torch.randn(4096, 512, generator=g)
    ref = _mse(pred, target)
    sampled = _mse(pred[::12], target[::12])  # 1 row in 12: ~0.1-0.3% off, inside the old 1% tolerance
    # the old rule (not a reduction) let it through; float32's norm-wise precision now refuses it as well
    assert not compare(sampled, ref, [pred, target], 1e-2).ok
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
    assert not compare(strided, ref, [x], 1e-2).ok  # the old rule let it through; float32's precision does not
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
    # rounding noise, and an honest plainer order of operations can land farther than PyTorch's draw
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
    assert e_plain > e_ref  # the plainer order lands farther than PyTorch's draw...
    cmp = compare(plain, ref, [], 1e-2, reduction=True, truth=lambda: exact)
    assert cmp.ok and "float64" in cmp.message  # ...and passes
    # rounding 20 times PyTorch's draw (the old rule, FP_NOISE x PyTorch, refused it) is inside the floor: the
    # answer itself is at float32's noise level
    direction = torch.randn(2, generator=g, dtype=torch.float64)
    far = (exact_t + 20 * e_ref * direction / direction.norm()).float()
    assert not compare(far, ref, [], 1e-2, reduction=True, truth=lambda: exact_t).ok  # no working scale: no floor
    cmp = compare(far, ref, [], 1e-2, reduction=True, truth=lambda: exact)
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


def _gn_mean_residual(x: torch.Tensor, plain: bool = False) -> torch.Tensor:
    """tests/verifier/attacks/tasks/gn_mean_residual.py: GroupNorm (4 groups, no affine), each sample's mean,
    plus 6e-7 times its first normalised value. ``plain``: float32 sums in loop order (an honest kernel)."""
    if not plain:
        y = torch.nn.functional.group_norm(x, 4)
        return y.mean(dim=(1, 2, 3)) + 6e-7 * y[:, 0, 0, 0]
    b = x.shape[0]
    g = x.reshape(b, 4, -1).double()
    mean, var = g.mean(-1), g.var(-1, unbiased=False)
    inv = (1 / torch.sqrt(var + 1e-5)).float()
    y = x.reshape(b, 4, -1) * inv[..., None] + (-mean.float() * inv)[..., None]
    total = y.cumsum(-1)[..., -1].double().sum(-1) / y[0].numel()
    return (total + 6e-7 * y[:, 0, 0].double()).float()


def test_the_floor_cannot_be_met_by_noise_where_the_answer_is_small_but_not_zero():
    # the answer (~6e-7 per sample) lies inside the working-scale floor, so the old rule let any output within
    # the floor pass: noise, a constant, a scaled copy of an input. float32 PyTorch resolves the answer to a few
    # percent, and those outputs are as far from it as 0 is
    from evokernel.verifier.sandboxed.op_recorder import ScaleRecorder

    g = torch.Generator().manual_seed(8)
    x = torch.rand(32, 8, 16, 16, generator=g)
    ref = _gn_mean_residual(x)
    rec = ScaleRecorder()
    rec.note(x.double())
    with rec:
        exact_t = _gn_mean_residual(x.double())
    exact = Exact(exact_t, rec.scale)
    floor = FP_NOISE * torch.finfo(torch.float32).eps / 2 * rec.scale * math.sqrt(32)
    e_exact, e_ref = float(exact_t.norm()), float((ref.double() - exact_t).norm())
    assert e_exact < floor / 2 and e_exact > FP_NOISE * e_ref  # inside the floor; resolved by float32
    noise = (torch.randn(32, generator=g, dtype=torch.float64) * (floor / 2 / math.sqrt(32))).float()
    assert float((noise.double() - exact_t).norm()) < floor  # the old rule let it pass
    scaled_input = (x[:, -1, -1, -1] * 1e-7).float()
    constant = torch.full((32,), float(exact_t.mean()), dtype=torch.float32)
    for name, bad in (("noise", noise), ("scaled input", scaled_input), ("constant", constant)):
        cmp = compare(bad, ref, [x], 1e-2, reduction=True, truth=lambda: exact)
        assert not cmp.ok, name
    cmp = compare(noise, ref, [x], 1e-2, reduction=True, truth=lambda: exact)
    assert "float32 resolves it" in cmp.message
    # the honest plain order passes (on its own merits or by carrying the answer), and so does PyTorch's answer
    honest = _gn_mean_residual(x, plain=True)
    assert compare(honest, ref, [x], 1e-2, reduction=True, truth=lambda: exact).ok
    assert compare(ref.clone(), ref, [x], 1e-2, reduction=True, truth=lambda: exact).ok
    # where the answer is exactly 0 (no residual), honest rounding noise keeps its floor
    ref0 = torch.nn.functional.group_norm(x, 4).mean(dim=(1, 2, 3))
    exact0 = Exact(torch.nn.functional.group_norm(x.double(), 4).mean(dim=(1, 2, 3)), rec.scale)
    honest0 = _group_norm_mean(x.unsqueeze(2), 4, plain=True)
    assert compare(honest0, ref0, [x], 1e-2, reduction=True, truth=lambda: exact0).ok


def test_a_float64_answer_that_is_not_finite_where_float32_is_is_left_to_the_scan():
    # float32 overflows to Inf where float64 does not: the candidate must repeat the float32 Inf (the scan), and
    # the float64 opinion judges the other elements
    exact = torch.tensor([1e39, 2e-6, -3e-6, 1e-6], dtype=torch.float64)
    ref = torch.tensor([float("inf"), 2.3e-6, -2.9e-6, 1.2e-6])
    honest = torch.tensor([float("inf"), 1.8e-6, -3.1e-6, 0.9e-6])
    assert compare(honest, ref, [], 1e-2, reduction=True, truth=lambda: exact).ok
    assert not compare(torch.tensor([3e38, 1.8e-6, -3.1e-6, 0.9e-6]), ref, [], 1e-2, reduction=True,
                       truth=lambda: exact).ok
    # the float64 value there (1e39) must not enter the distances: it would excuse any error elsewhere
    wrong = torch.tensor([float("inf"), 6e-6, -1e-6, 3e-6])
    cmp = compare(wrong, ref, [], 1e-2, reduction=True, truth=lambda: exact)
    assert not cmp.ok and "float64" in cmp.message


# --- tolerances follow the output dtype ---------------------------------------------------------------------
from evokernel.verifier.trusted.correctness import Tolerance, tolerance  # noqa: E402


def test_the_tolerance_table():
    assert tolerance(torch.float32, 1e-2) == Tolerance(1e-2, 1e-4, 1e-4)  # float32 is float32-accurate norm-wise
    assert tolerance(torch.float32, 1e-4) == Tolerance(1e-4, 1e-4, 1e-4)
    assert tolerance(torch.float16, 1e-2).normwise(False) == 1e-2  # half outputs: their elementwise value
    f64 = tolerance(torch.float64, 1e-2)
    assert f64.elementwise == pytest.approx(1e-9) and f64.reduction == pytest.approx(1e-10)
    assert tolerance(torch.float64, 1e-4).elementwise == pytest.approx(1e-11)
    # half precision: the configured tolerance, never below one unit of the dtype's rounding
    assert tolerance(torch.float16, 1e-2) == Tolerance(1e-2, 1e-4)
    assert tolerance(torch.bfloat16, 1e-2) == Tolerance(1e-2, 1e-4)
    assert tolerance(torch.float16, 1e-4).elementwise == torch.finfo(torch.float16).eps
    assert tolerance(torch.bfloat16, 1e-4).elementwise == torch.finfo(torch.bfloat16).eps


def _blocked_mm(a: torch.Tensor, b: torch.Tensor, bk: int = 64) -> torch.Tensor:
    out = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
    for k in range(0, a.shape[1], bk):
        out += a[:, k:k + bk] @ b[k:k + bk]
    return out


def test_float64_outputs_must_be_float64_accurate():
    from evokernel.verifier.sandboxed.trial_inputs import PERTURBATIONS

    g = torch.Generator().manual_seed(4)
    for perturb in ("none", "heavy"):
        torch.manual_seed(1)
        a = PERTURBATIONS[perturb](torch.randn(128, 1024, generator=g)).double()
        b = PERTURBATIONS[perturb](torch.randn(1024, 96, generator=g)).double()
        ref = a @ b
        assert compare(_blocked_mm(a, b), ref, [a, b], 1e-2).ok  # another summation order, in double
        assert compare(_blocked_mm(a, b), ref, [a, b], 1e-4).ok  # strict mode too
        widened = (a.float() @ b.float()).double()  # float32 arithmetic, widened on output
        cmp = compare(widened, ref, [a, b], 1e-2)
        assert not cmp.ok and "float64 output" in cmp.message
    # reductions: a mean in another order passes, the float32 one does not
    p, t = torch.randn(512, 1024, generator=g).double(), torch.randn(512, 1024, generator=g).double()
    mse = ((p - t) ** 2).mean().reshape(())
    honest = (((p - t) ** 2).reshape(-1).cumsum(0)[-1] / p.numel()).reshape(())
    assert compare(honest, mse, [p, t], 1e-2, reduction=True).ok
    as_float = ((p.float() - t.float()) ** 2).mean().double().reshape(())
    cmp = compare(as_float, mse, [p, t], 1e-2, reduction=True)
    assert not cmp.ok and "float64 output" in cmp.message
    # elementwise transcendental: libm in double vs float
    x = torch.randn(1 << 16, generator=g).double() * 3
    assert compare(0.5 * x * (1 + torch.erf(x / math.sqrt(2))), torch.nn.functional.gelu(x), [x], 1e-2).ok
    assert not compare(torch.nn.functional.gelu(x.float()).double(), torch.nn.functional.gelu(x), [x], 1e-2).ok


def test_half_outputs_are_not_held_to_more_than_half_precision():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(4096, generator=g) * 4
    for dtype in (torch.float16, torch.bfloat16):
        ref = torch.nn.functional.gelu(x.to(dtype))
        one_ulp = (ref.float() * (1 + torch.finfo(dtype).eps / 2)).to(dtype)  # many elements one unit up
        assert not torch.equal(one_ulp, ref)
        assert compare(one_ulp, ref, [x.to(dtype)], 1e-2).ok
        assert compare(one_ulp, ref, [x.to(dtype)], 1e-4).ok  # strict mode: one unit of rounding still passes
        assert not compare((ref.float() * 1.05).to(dtype), ref, [x.to(dtype)], 1e-4).ok


def test_a_few_elements_float32_itself_misses_are_asked_of_the_float64_answer():
    # a GEMM on heavy-tailed inputs can cancel to a small value that float32 PyTorch misses by more than atol;
    # an honest kernel in another summation order then lands outside atol of PyTorch's element, not of the answer
    g = torch.Generator().manual_seed(3)
    exact = torch.randn(64, 64, generator=g, dtype=torch.float64)
    ref = exact.float()
    ref[5, 7] = float(exact[5, 7]) + 0.03  # PyTorch's own rounding, this far off at one element
    honest = exact.float()
    honest[5, 7] = float(exact[5, 7]) - 0.027  # as far from the answer, on the other side
    assert not compare(honest, ref, [], 1e-2).ok  # no second opinion: refused
    assert compare(honest, ref, [], 1e-2, truth=lambda: exact).ok
    # a candidate wrong at that element by more than 8x PyTorch's distance is refused, as is one whose other
    # elements PyTorch got right
    wrong = exact.float()
    wrong[5, 7] = float(exact[5, 7]) - 0.3
    assert not compare(wrong, ref, [], 1e-2, truth=lambda: exact).ok
    wrong = honest.clone()
    wrong[9, 9] += 0.05
    assert not compare(wrong, ref, [], 1e-2, truth=lambda: exact).ok
    # a NaN where the reference is finite never passes, however few
    nan_one = honest.clone()
    nan_one[1, 1] = float("nan")
    assert not compare(nan_one, ref, [], 1e-2, truth=lambda: exact).ok
    # many misses are a wrong kernel: the float64 answer is not even computed
    def never():
        raise AssertionError("the float64 forward ran for a kernel that misses many elements")

    assert not compare(exact.float() + 0.5, ref, [], 1e-2, truth=never).ok


def test_a_reference_that_overflowed_its_own_precision_is_not_repeated():
    # a float16 GEMM on heavy inputs: PyTorch's half partial sums overflow (NaN/Inf) where the float64 answer is
    # finite and representable; an honest kernel accumulating in float32 gives the answer there
    exact = torch.tensor([1.0, 2.0, 300.0, 4.0], dtype=torch.float64)
    ref = exact.half()
    ref[2] = float("nan")
    honest = exact.half()
    assert not compare(honest, ref, [], 1e-2).ok  # no second opinion: the NaN must be repeated
    assert compare(honest, ref, [], 1e-2, truth=lambda: exact).ok
    wrong = honest.clone()
    wrong[2] = 0.0  # not the answer either
    assert not compare(wrong, ref, [], 1e-2, truth=lambda: exact).ok
    # where the float64 answer is NaN too (or beyond the dtype), the NaN is the task's and must be repeated
    nan_exact = exact.clone()
    nan_exact[2] = float("nan")
    assert not compare(honest, ref, [], 1e-2, truth=lambda: nan_exact).ok
    big = exact.clone()
    big[2] = 1e6
    assert not compare(honest, ref, [], 1e-2, truth=lambda: big).ok


# --- float32 outputs are float32-accurate (norm-wise 1e-4, the float64 opinion first) -------------------------
def test_float32_outputs_rounded_or_approximated_inside_1e_2_are_refused():
    import math

    import torch.nn.functional as F

    x = torch.randn(256, 1024, generator=torch.Generator().manual_seed(11))
    ref = F.gelu(x)
    exact = (0.5 * x.double() * (1 + torch.erf(x.double() / math.sqrt(2))))
    for low in (ref.bfloat16().float(), ref.half().float(), F.gelu(x, approximate="tanh")):
        assert ((low - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).all()  # each one is inside the paper's tolerance
        cmp = compare(low, ref, [x], 1e-2, truth=lambda: exact)
        assert not cmp.ok and "float32-accurate" in cmp.message, cmp.message
        assert not quick_match(low, ref, 1e-2)  # the timed rounds' check too
    honest = exact.float()  # another order of operations (here: the float64 answer rounded once)
    assert compare(honest, ref, [x], 1e-2, truth=lambda: exact).ok and quick_match(honest, ref, 1e-2)


def test_where_float32_pytorch_is_itself_imprecise_the_float64_opinion_decides():
    g = torch.Generator().manual_seed(12)
    a = 1e4 + torch.randn(4096, generator=g)
    b = torch.randn(4096, generator=g)
    c = a + 1e-3 * torch.randn(4096, generator=g)
    ref = (a + b) - c  # a + b rounds b to 1e-3: float32 PyTorch is ~1e-3 off the exact answer, relatively
    exact = (a.double() + b.double()) - c.double()
    better = ((a - c) + b)  # an honest kernel in another order, closer to the exact answer
    assert (better - ref).norm() / ref.norm() > 1e-4  # the norm-wise rule alone would refuse it
    assert compare(better, ref, [a, b, c], 1e-2, truth=lambda: exact).ok
    worse = ref + 0.05 * torch.randn(4096, generator=g) * ref.abs().mean()  # inside 1e-2? no matter: refused
    assert not compare(worse, ref, [a, b, c], 1e-2, truth=lambda: exact).ok
