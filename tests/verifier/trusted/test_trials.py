"""The trial loop (`verifier/trusted/trials.py`): no trial is skipped (a NaN/Inf reference is drawn again, then
judged with those positions masked), one trial and the timing run with constant initialisers drawn at random,
and timed outputs are judged element by element too."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from evokernel.tasks.task import TaskError
from evokernel.tasks.load import load_task

ATTACKS = Path(__file__).resolve().parents[1] / "attacks"

SOMETIMES_NAN = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """Rows divided by their sum; about half the draws hold a row of zeros (0/0 = NaN)."""
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / x.sum(dim=1, keepdim=True)

def get_inputs():
    x = torch.rand(16, 64) + 0.1
    if float(torch.rand(())) < 0.5:
        x[3] = 0.0
    return [x]

def get_init_inputs():
    return []
'''

ROW_DIVIDE = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void row_divide(const float* x, float* y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
        for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] / s;
    }
}
""")

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.row_divide(x, out, x.shape[0], x.shape[1])
        return out
'''

ALL_NAN = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * float("nan")

def get_inputs():
    return [torch.randn(8, 8)]

def get_init_inputs():
    return []
'''

GN_MEAN = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """GroupNorm (default affine), then the mean of each sample: exactly 0 unless the affine is not the default."""
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(4, 8)

    def forward(self, x):
        return self.norm(x).mean(dim=(1, 2, 3))

def get_inputs():
    return [torch.randn(4, 8, 6, 6)]

def get_init_inputs():
    return []
'''

GN_MEAN_KERNEL = r"""
#include <cmath>
#include <cstdint>
extern "C" void gn_mean(const float* x, const float* w, const float* b, float* y, int64_t batch, int64_t channels,
                        int64_t groups, int64_t spatial, float eps) {
    const int64_t cpg = channels / groups, n = cpg * spatial;
    for (int64_t s = 0; s < batch; ++s) {
        double total = 0.0;
        for (int64_t g = 0; g < groups; ++g) {
            const float* in = x + (s * groups + g) * n;
            double m = 0.0, v = 0.0;
            for (int64_t i = 0; i < n; ++i) m += in[i];
            m /= n;
            for (int64_t i = 0; i < n; ++i) v += (in[i] - m) * (in[i] - m);
            const double inv = 1.0 / std::sqrt(v / n + eps);
            for (int64_t c = 0; c < cpg; ++c) {
                const int64_t ch = g * cpg + c;
                for (int64_t i = 0; i < spatial; ++i) total += (in[c * spatial + i] - m) * inv * w[ch] + b[ch];
            }
        }
        y[s] = (float)(total / (channels * spatial));
    }
}
"""


def _candidate(weights: str, w: str = "self.norm.weight", b: str = "self.norm.bias") -> str:
    """A GN_MEAN kernel; ``weights``: how ModelNew makes the affine parameters, ``w`` and ``b``: where they are."""
    return ("import torch\nimport torch.nn as nn\nfrom evokernel.cpu import load_cpp\n\n"
            f"lib = load_cpp(r'''{GN_MEAN_KERNEL}''')\n\n" + textwrap.dedent(f'''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        {weights}

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty((x.shape[0],), dtype=torch.float32)
        lib.gn_mean(x, {w}.contiguous(), {b}.contiguous(), out, x.shape[0], x.shape[1], 4,
                    x.shape[2] * x.shape[3], 1e-5)
        return out
'''))


@pytest.fixture
def make_task(tmp_path):
    def make(name: str, source: str):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        return load_task(path)
    return make


@pytest.fixture
def seeded(verifier):
    """The session verifier with a fixed secret seed (deterministic draws) for one test."""
    saved = verifier.config.seed, verifier.config.timing, verifier.config.perturbed_parameters
    verifier.config.seed = 20261128
    yield verifier
    verifier.config.seed, verifier.config.timing, verifier.config.perturbed_parameters = saved


def test_a_nan_reference_is_drawn_again_from_fresh_seeds(seeded, make_task):
    v = seeded.verify(make_task("sometimes_nan", SOMETIMES_NAN), ROW_DIVIDE)
    assert v.feasible, v.feedback
    notes = v.details["trials"]["nonfinite_reference"]
    drawn = [n for n in notes if not any(p in n["trial"] for p in ("special", "distinct"))]
    assert drawn and all(n["redraws"] >= 1 for n in drawn)  # about half the first draws held a zero row
    # (the special and distinct trials are judged as drawn: NaN/Inf is there by construction in most tasks)
    assert all(n["redraws"] == 0 for n in notes if n not in drawn)
    assert any(n["nonfinite_elements"] == 0 for n in notes)  # ... and a fresh draw did not
    assert v.details["trials"]["passed"] == 12  # 4 trials, 6 perturbed inputs, 2 with drawn parameters


def test_a_reference_that_stays_nan_is_judged_with_the_nan_positions_masked(seeded):
    task = load_task(ATTACKS / "tasks" / "l2_normalize_padded.py")
    honest = seeded.verify(task, (ATTACKS / "twins" / "normalize_plain.py").read_text())
    assert honest.feasible, honest.feedback
    notes = honest.details["trials"]["nonfinite_reference"]
    # every trial but the shifted one keeps its padding rows through the redraws: 32 rows x 1024 NaN; the special
    # inputs' constant column crosses the padding rows (finite then), and a NaN there would be judged as drawn
    planted = ("special", "distinct")  # NaN by construction there: never drawn again
    plain = [n for n in notes if not any(p in n["trial"] for p in planted)]
    assert len(plain) == 7 and all(n["redraws"] == 3 and n["nonfinite_elements"] == 32 * 1024 for n in plain)
    assert all(n["redraws"] == 0 for n in notes if any(p in n["trial"] for p in planted))
    skipping = seeded.verify(task, (ATTACKS / "c9_values" / "normalize_padding_skip.py").read_text())
    assert skipping.failed_gate == "correctness" and "position by position" in skipping.feedback


NAN_KERNEL = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void nan_all(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * NAN;
}
""")

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.nan_all(x, out, x.numel())
        return out
'''


def test_a_reference_that_is_nan_everywhere_is_a_broken_task(seeded, make_task):
    # nothing finite to judge in any trial: a kernel that only writes NaN would pass, so the task is refused
    with pytest.raises(TaskError, match="NaN/Inf in every element"):
        seeded.verify(make_task("all_nan", ALL_NAN), NAN_KERNEL)


def test_one_trial_builds_both_models_with_drawn_constants(seeded, make_task):
    task = make_task("gn_mean", GN_MEAN)
    layers = "self.norm = nn.GroupNorm(4, 8)"
    v = seeded.verify(task, _candidate(layers))
    assert v.feasible, v.feedback
    assert v.details["trials"]["perturbed_parameters"] is True and v.details["trials"]["passed"] == 12
    # parameters made by hand (torch.ones/zeros) do not get the drawn values: the contract is the same layers
    by_hand = _candidate("self.w = nn.Parameter(torch.ones(8))\n        self.b = nn.Parameter(torch.zeros(8))",
                         "self.w", "self.b")
    v = seeded.verify(task, by_hand)
    assert v.failed_gate == "correctness" and "trial 11 (perturbed parameters, special inputs)" in v.feedback
    assert "constant initialisers drawn at random" in v.feedback
    seeded.config.perturbed_parameters = False  # the old verifier: every trial with weight 1 and bias 0
    v = seeded.verify(task, by_hand)
    assert v.feasible and v.details["trials"]["passed"] == 10 and "perturbed_parameters" not in v.details["trials"]


def test_timing_uses_the_models_with_drawn_constants(seeded, make_task):
    task = make_task("gn_mean", GN_MEAN)
    seeded.config.timing = True
    saved = {k: getattr(seeded.config, k) for k in ("warmup", "min_rounds", "max_rounds")}
    seeded.config.warmup, seeded.config.min_rounds, seeded.config.max_rounds = 1, 3, 3
    try:
        v = seeded.verify(task, _candidate("self.norm = nn.GroupNorm(4, 8)"))
    finally:
        for k, val in saved.items():
            setattr(seeded.config, k, val)
    assert v.feasible and v.speedup, v.feedback  # every timed output matched the perturbed reference
    from evokernel.verifier.trusted import regions

    ref = seeded._pool.get(task)  # the reference the rounds were timed against: still the perturbed model
    ref.make_inputs(1, "none")
    metas, _ = ref.run()
    assert float(regions.tensor(ref.handle, metas[0]).abs().min()) > 1e-3


def test_timed_outputs_are_judged_element_by_element():
    from evokernel.verifier.trusted.failures import Fail
    from evokernel.verifier.trusted.timing_protocol import check_timed_output

    ok = {"ok": True, "native_calls": 1}
    ref = torch.randn(64, 64)
    ref[5] = float("nan")
    check_timed_output(ok, [ref.clone()], [ref], 1e-2, 4096)
    for bad in (torch.where(torch.isnan(ref), torch.zeros_like(ref), ref),  # finite where NaN is due
                torch.where(torch.isnan(ref), ref, torch.zeros_like(ref))):  # NaN repeated, the rest skipped
        with pytest.raises(Fail) as err:
            check_timed_output(ok, [bad], [ref], 1e-2, 4096)
        assert err.value.gate == "correctness"


RELU_PROPAGATING = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu_nan(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) { float v = x[i]; y[i] = (v < 0.0f) ? 0.0f : v; }  // NaN and +Inf kept
}
""")

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_nan(x, out, x.numel())
        return out
'''


def test_the_opt_in_nonfinite_trial_shows_a_kernel_nan_and_inf(seeded):
    """Off by default (docs/verifier.md: what it would cost honest kernels); with it, a kernel wrong only where
    an input is NaN or Inf is refused and one that gives what PyTorch gives there passes."""
    task = load_task(Path(__file__).resolve().parents[3] / "evokernel/suites/cpu_l1/01_relu.py",
                     {"batch_size": 4, "dim": 4096})
    wrong = (ATTACKS / "c9_values" / "rt2_wrong_at_nan_and_inf.py").read_text()
    assert seeded.verify(task, wrong).feasible  # the default plan draws finite inputs only
    saved = seeded.config.perturbations
    seeded.config.perturbations = (*saved, "nonfinite")
    try:
        v = seeded.verify(task, wrong)
        assert v.failed_gate == "correctness" and "nonfinite inputs" in v.feedback and "NaN" in v.feedback
        ok = seeded.verify(task, RELU_PROPAGATING)
        assert ok.feasible, ok.feedback
        assert any(n["redraws"] == 0 for n in ok.details["trials"]["nonfinite_reference"])  # judged as drawn
    finally:
        seeded.config.perturbations = saved


RELU = Path(__file__).resolve().parents[3] / "evokernel/suites/cpu_l1/01_relu.py"
LAYER_NORM = Path(__file__).resolve().parents[3] / "evokernel/suites/cpu_l1/13_layer_norm.py"


@pytest.mark.parametrize("attack, task, sizes", [
    ("rt4_wrong_on_exact_zero.py", RELU, {"batch_size": 8, "dim": 1024}),  # NaN at x == 0
    ("rt4_wrong_above_1e6.py", RELU, {"batch_size": 8, "dim": 1024}),  # 0 for x > 1e6
    ("rt4_wrong_on_constant_rows.py", LAYER_NORM, {"batch_size": 16, "features": 256}),  # 0, not the bias
])
def test_the_special_trial_shows_values_random_draws_never_give(seeded, attack, task, sizes):
    """Exact signed zeros, finite values above 1e6 and rows of one value: i.i.d. draws never hold them, the
    special trial (and the perturbed-parameter trial after it) does; the honest kernel passes."""
    task = load_task(task, sizes)
    v = seeded.verify(task, (ATTACKS / "c9_values" / attack).read_text())
    assert v.failed_gate == "correctness" and "(special inputs)" in v.feedback, v.feedback
    assert "exact +0.0 and -0.0" in v.feedback and "constant rows" in v.feedback
    assert v.details["trials"]["passed"] == 8  # every earlier trial passed: only these inputs show it
    if task.path == RELU:
        ok = seeded.verify(task, RELU_PROPAGATING)
        assert ok.feasible and ok.details["trials"]["passed"] == 12, ok.feedback


LN_DEFAULT = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """LayerNorm with its default affine (weight 1, bias 0)."""
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(256)

    def forward(self, x):
        return self.ln(x)

def get_inputs():
    return [torch.randn(16, 256)]

def get_init_inputs():
    return []
'''

LN_ZERO_ON_CONSTANT_ROWS = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void ln(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        double s = 0.0, q = 0.0;
        for (int64_t i = 0; i < n; ++i) s += xr[i];
        const double m = s / n;
        for (int64_t i = 0; i < n; ++i) q += (xr[i] - m) * (xr[i] - m);
        if (q == 0.0) { for (int64_t i = 0; i < n; ++i) yr[i] = 0.0f; continue; }  // right only while b == 0
        const double inv = 1.0 / std::sqrt(q / n + eps);
        for (int64_t i = 0; i < n; ++i) yr[i] = (float)((xr[i] - m) * inv * w[i] + b[i]);
    }
}
""")

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(256)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.ln(x, self.ln.weight, self.ln.bias, out, x.shape[0], 256, 1e-5)
        return out
'''


def test_the_perturbed_parameter_trial_draws_the_special_inputs(seeded, make_task):
    """Under the default affine a constant row's answer is 0, so only drawn parameters AND a constant row show a
    kernel that writes 0 there; the perturbed-parameter trial has both."""
    task = make_task("ln_default", LN_DEFAULT)
    v = seeded.verify(task, LN_ZERO_ON_CONSTANT_ROWS)
    assert v.failed_gate == "correctness" and "(perturbed parameters, special inputs)" in v.feedback, v.feedback
    assert "constant initialisers drawn at random" in v.feedback and "constant rows" in v.feedback
    seeded.config.perturbed_parameters = False  # the special trial alone (bias 0) cannot tell
    v = seeded.verify(task, LN_ZERO_ON_CONSTANT_ROWS)
    assert v.feasible and v.details["trials"]["passed"] == 10, v.feedback


def test_a_special_trial_that_overflows_by_construction_is_judged_as_drawn(seeded):
    """exp(1e8) is +Inf on every draw of the special inputs: no fresh seeds are spent on it, the Inf positions are
    matched and the rest judged (the honest kernel passes)."""
    task = load_task(ATTACKS / "tasks" / "exp.py", {"batch_size": 16, "dim": 4096})
    v = seeded.verify(task, (ATTACKS / "twins" / "exp_plain.py").read_text())
    assert v.feasible, v.feedback
    special = [n for n in v.details["trials"]["nonfinite_reference"] if "special" in n["trial"]]
    assert len(special) == 2 and all(n["redraws"] == 0 and n["nonfinite_elements"] >= 1 for n in special)


def test_an_index_output_of_the_special_trial_is_not_judged_by_value():
    """Planted equal values make ties: a nearest-neighbour kernel (wy_three_nn, a community Ascend C operator) named
    index 5 where PyTorch named 16 at equal distance. Under the special trial an integer output is judged by its
    shape and dtype; floating outputs still by value."""
    from evokernel.verifier.trusted.failures import Fail
    from evokernel.verifier.trusted.trials import compare_outputs

    x = torch.zeros(4, 8)
    dist, idx = torch.zeros(4, 3), torch.tensor([[16, 2, 3]] * 4)
    other = idx.clone()
    other[0, 0] = 5
    compare_outputs("trial 9 (special inputs)", [dist, other], [dist, idx], [x], 1e-2, ties=True)
    with pytest.raises(Fail):
        compare_outputs("trial 1", [dist, other], [dist, idx], [x], 1e-2)
    with pytest.raises(Fail):  # a wrong distance is wrong whatever the ties
        compare_outputs("trial 9 (special inputs)", [dist + 1, idx], [dist, idx], [x], 1e-2, ties=True)
    with pytest.raises(Fail):  # and an index output of another shape too
        compare_outputs("trial 9 (special inputs)", [dist, idx[:, :2]], [dist, idx], [x], 1e-2, ties=True)


def test_a_bool_output_of_the_special_trial_is_judged_by_value():
    """A mask has one answer however many values are equal: the ties rule covers index outputs only
    (red team round 5: `x > 0` answered False for x >= 1e6 passed, every non-floating output being skipped)."""
    from evokernel.verifier.trusted.failures import Fail
    from evokernel.verifier.trusted.trials import compare_outputs

    x = torch.tensor([[1.0, 2e6, -1.0, 0.0]])
    wrong = torch.tensor([[True, False, False, False]])
    with pytest.raises(Fail, match="1 of 4 elements differ"):
        compare_outputs("trial 9 (special inputs)", [wrong], [x > 0], [x], 1e-2, ties=True)
    compare_outputs("trial 9 (special inputs)", [x > 0], [x > 0], [x], 1e-2, ties=True)


ARGMAX_ROWS = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=-1)


def get_inputs():
    return [torch.randn(64, 512)]


def get_init_inputs():
    return []
"""


def test_integer_outputs_are_compared_on_the_distinct_trials(seeded, make_task):
    """The distinct trials plant zeros, tiny and large values without ties, and compare an index output exactly: an
    argmax wrong on every row holding a large value (rt5_argmax_wrong_on_special_rows) fails there, and only there;
    the honest argmax passes all 12 trials."""
    task = make_task("argmax_rows", ARGMAX_ROWS)
    honest = seeded.verify(task, (ATTACKS / "twins" / "argmax_rows_plain.py").read_text())
    assert honest.feasible and honest.details["trials"]["passed"] == 12, honest.feedback
    wrong = (ATTACKS / "c9_values" / "rt5_argmax_wrong_on_special_rows.py").read_text()
    v = seeded.verify(task, wrong)
    assert v.failed_gate == "correctness" and "(distinct inputs)" in v.feedback, v.feedback
    assert "no ties" in v.feedback and "elements differ" in v.feedback
    saved = seeded.config.perturbations
    try:  # without the distinct trials (the old plan), nothing compares it on such values
        seeded.config.perturbations = tuple(p for p in saved if p != "distinct")
        seeded.config.perturbed_parameters = False
        v = seeded.verify(task, wrong)
        assert v.feasible, v.feedback
    finally:
        seeded.config.perturbations = saved


def test_the_second_perturbed_parameter_trial_compares_integer_outputs(seeded):
    """argmax(LayerNorm(x)) answered as argmax(x) (rt5_argmax_ignores_layernorm_affine) is right under the default
    affine; only drawn parameters show it, and the first perturbed-parameter trial (special inputs: ties) does not
    compare integers. The second one, on distinct inputs, does."""
    task = load_task(ATTACKS / "tasks" / "rt5_argmax_layernorm.py")
    honest = seeded.verify(task, (ATTACKS / "twins" / "argmax_layernorm_plain.py").read_text())
    assert honest.feasible, honest.feedback
    saved = seeded.config.perturbations
    try:  # the distinct trial without drawn parameters passes it: the perturbed-parameter trial is what refuses it
        seeded.config.perturbations = tuple(p for p in saved if p != "distinct")
        v = seeded.verify(task, (ATTACKS / "c9_values" / "rt5_argmax_ignores_layernorm_affine.py").read_text())
        assert v.failed_gate == "correctness" and "(perturbed parameters, distinct inputs, parameters negated in place)" in v.feedback, v.feedback
        assert "constant initialisers drawn at random" in v.feedback
    finally:
        seeded.config.perturbations = saved
