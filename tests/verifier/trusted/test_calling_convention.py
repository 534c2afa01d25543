"""The trials call both models as a user does (verifier/trusted/trials.py, sandboxed/worker.py): the candidate's
output has the reference's structure, one trial runs both models in eval() mode, one passes the inputs by keyword
with Model's names, and one passes one tensor for inputs of the same shape and dtype. Each rule is shown a kernel
that beats a weaker form of it (red-team round 11: tests/verifier/attacks, prefix rt11_)."""
from __future__ import annotations

import textwrap

import pytest

from evokernel.tasks.load import load_task

# an elementwise add in C++: every candidate below computes with it, only how forward is called or returns differs
ADD = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void add2(const float* a, const float* b, float* y, float* z, int64_t n) {
    for (int64_t i = 0; i < n; ++i) { y[i] = a[i] + b[i]; z[i] = a[i] - b[i]; }
}
""")
'''

PAIR_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """Sum and difference, returned as a tuple."""
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b, a - b

def get_inputs():
    return [torch.randn(8, 64), torch.randn(8, 64)]

def get_init_inputs():
    return []
'''


CALL = """a, b = a.contiguous(), b.contiguous()
    y, z = torch.empty_like(a), torch.empty_like(a)
    lib.add2(a, b, y, z, a.numel())"""


def _cand(forward: str) -> str:
    """ModelNew with this forward (CALL in it is the native call that leaves a + b in y and a - b in z)."""
    return ADD + "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n" + \
        textwrap.indent(textwrap.dedent(forward).replace("CALL", CALL), "    ")


@pytest.fixture
def make_task(tmp_path):
    def make(name: str, source: str):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        return load_task(path)
    return make


# --- the output's structure ---------------------------------------------------------------------------


@pytest.mark.parametrize("ret, ok", [
    ("return y, z", True),
    ("return (y, z)", True),
    ("return [y, z]", False),  # a list for a tuple: as many tensors (a count-only rule passes it); `out + (w,)` fails
    ("return y, z, y", False),
    ("return ((y, z),)", False),  # nested
])
def test_the_output_has_the_references_structure(verifier, make_task, ret, ok):
    task = make_task("pair", PAIR_TASK)
    v = verifier.verify(task, _cand(f"def forward(self, a, b):\n    CALL\n    {ret}\n"))
    assert v.feasible is ok, v.feedback
    if not ok:  # a nested return is refused by the glue rules already
        assert v.failed_gate in ("correctness", "hack"), v.feedback


def test_a_tensor_in_a_one_tuple_is_not_a_tensor(verifier, suite_task):
    """rt11_output_in_a_tuple: one tensor either way, so a rule counting tensors passes it; model(x).sum() fails."""
    task = suite_task("cpu_l1/06_elementwise_add.py", batch_size=4, dim=256)
    tuple_one = _cand("def forward(self, a, b):\n    CALL\n    return (y,)\n")
    v = verifier.verify(task, tuple_one)
    assert v.failed_gate == "correctness" and "a tuple of 1" in v.feedback and "a tensor" in v.feedback, v.feedback
    honest = verifier.verify(task, tuple_one.replace("return (y,)", "return y"))
    assert honest.feasible, honest.feedback


# --- one trial in eval() mode ----------------------------------------------------------------------------

def _corpus(path: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "attacks" / path).read_text()


def test_one_trial_runs_both_models_in_eval_mode(verifier):
    """rt11_bn_eval_mode_ignored: a BatchNorm1d normalising with the batch's statistics in eval mode too."""
    task = load_task(Path_attacks("tasks/rt11_batchnorm1d.py"))
    twin = _corpus("twins/rt11_bn_eval_mode_ignored_plain.py")
    v = verifier.verify(task, twin.replace("EVAL_IGNORED = False", "EVAL_IGNORED = True"))
    assert v.failed_gate == "correctness" and "eval mode" in v.feedback, v.feedback
    honest = verifier.verify(task, twin)
    assert honest.feasible, honest.feedback


def test_eval_mode_is_run_for_every_model_not_only_where_the_reference_has_a_norm(verifier, suite_task):
    """A weaker rule -- eval mode only where the reference's answer depends on it (a norm, a dropout) -- passes a
    ReLU task's kernel that answers its input unchanged once model.eval() is called."""
    task = suite_task("cpu_l1/06_elementwise_add.py", batch_size=4, dim=256)
    v = verifier.verify(task, _cand("def forward(self, a, b):\n    CALL\n    if self.training:\n        return y\n"
                                    "    return z\n"))
    assert v.failed_gate == "correctness" and "eval mode" in v.feedback, v.feedback


def test_the_models_are_back_in_training_mode_after_the_eval_trial(verifier, make_task):
    """Both models return to training mode: a BatchNorm task's later trials still judge the batch statistics."""
    task = load_task(Path_attacks("tasks/rt11_batchnorm1d.py"))
    only_eval = _corpus("twins/rt11_bn_eval_mode_ignored_plain.py").replace(
        "if self.training or EVAL_IGNORED:", "if False:")
    v = verifier.verify(task, only_eval)  # the running statistics always: right in eval mode only
    assert v.failed_gate == "correctness" and "eval mode" not in v.feedback.splitlines()[0], v.feedback


def Path_attacks(rel: str):
    from pathlib import Path

    return Path(__file__).resolve().parents[1] / "attacks" / rel


# --- one trial by keyword --------------------------------------------------------------------------------

SWAP_ON_KEYWORDS = """def forward(self, x=None, y=None, *, a=None, b=None):
    if a is not None:
        x, y = b, a
    a, b = x, y
    CALL
    return y
"""


@pytest.mark.parametrize("forward, ok", [
    ("def forward(self, a, b):\n    CALL\n    return z\n", True),
    ("def forward(self, A, B):\n    a, b = A, B\n    CALL\n    return z\n", True),  # renamed: called by position
    # the names swapped (rt11_keyword_args_swapped): model(A, B) is right, model(a=A, b=B) gets B - A
    ("def forward(self, b, a):\n    a, b = b, a\n    CALL\n    return z\n", False),
    # Model's names only as keyword-only parameters: a rule comparing the positions of shared positional
    # parameters (a static rule on the signature) passes it; the keyword call swaps them
    (SWAP_ON_KEYWORDS.replace("return y", "return z"), False),
])
def test_one_trial_passes_the_inputs_by_keyword(verifier, make_task, forward, ok):
    task = make_task("diff", PAIR_TASK.replace("return a + b, a - b", "return a - b").replace(
        "Sum and difference, returned as a tuple.", "The difference."))
    v = verifier.verify(task, _cand(forward))
    assert v.feasible is ok, v.feedback
    if not ok:
        assert v.failed_gate == "correctness" and "by keyword" in v.feedback, v.feedback


def test_keyword_spec_reads_model_forward():
    from evokernel.verifier.trusted.trials import keyword_spec

    assert keyword_spec("class Model:\n    def forward(self, a, b): pass\n") == {"positional": 0, "names": ["a", "b"]}
    assert keyword_spec("class Model:\n    def forward(self, a, /, b, *rest): pass\n") == {"positional": 1,
                                                                                         "names": ["b"]}
    assert keyword_spec("class Model:\n    def forward(self, *xs): pass\n") is None
    assert keyword_spec("class Other:\n    def forward(self, a): pass\n") is None


# --- one tensor for inputs of one shape and dtype ---------------------------------------------------------------


@pytest.mark.parametrize("forward, ok", [
    ("def forward(self, a, b):\n    CALL\n    return y\n", True),
    # `a is b`: a rule passing two views of one memory (or equal copies) never makes this true
    ("def forward(self, a, b):\n    CALL\n    if a is b:\n        return a.clone()\n    return y\n", False),
])
def test_one_trial_passes_one_tensor_for_equal_inputs(verifier, suite_task, forward, ok):
    task = suite_task("cpu_l1/06_elementwise_add.py", batch_size=4, dim=256)
    v = verifier.verify(task, _cand(forward))
    assert v.feasible is ok, v.feedback
    if not ok:
        assert v.failed_gate in ("correctness", "hack") and "one tensor" in v.feedback, v.feedback


def test_a_kernel_comparing_data_pointers_sees_one_tensor(verifier, suite_task):
    """rt11_aliased_inputs_add: the native add tests whether its inputs share memory; equal copies (the special
    trial's ties across inputs) never make the pointers equal."""
    task = suite_task("cpu_l1/06_elementwise_add.py", batch_size=16, dim=4096)
    v = verifier.verify(task, _corpus("c9_values/rt11_aliased_inputs_add.py"))
    assert v.failed_gate == "correctness" and "one tensor" in v.feedback, v.feedback
    assert verifier.verify(task, _corpus("twins/rt11_aliased_inputs_add_plain.py")).feasible


LAYER_NORM_AFFINE_IN_TRAINING_ONLY = r'''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cmath>
extern "C" void layer_norm(const float* x, const float* g, const float* b, float* y, int64_t rows, int64_t d,
                           float eps, int64_t affine) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * d;
        double m = 0.0, v = 0.0;
        for (int64_t i = 0; i < d; ++i) m += xr[i];
        m /= d;
        for (int64_t i = 0; i < d; ++i) v += (xr[i] - m) * (xr[i] - m);
        v /= d;
        const double inv = 1.0 / std::sqrt(v + eps);
        for (int64_t i = 0; i < d; ++i) {
            const float n = (float)((xr[i] - m) * inv);
            y[r * d + i] = affine ? n * g[i] + b[i] : n;
        }
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape)
        d = self.ln.weight.numel()
        lib.layer_norm(x, self.ln.weight, self.ln.bias, out, x.numel() // d, d, self.ln.eps, AFFINE)
        return out
'''


LAYER_NORM_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return self.ln(x)

def get_inputs():
    return [torch.randn(32, 256)]

def get_init_inputs():
    return [256]
'''


@pytest.mark.parametrize("affine, ok", [("1", True), ("1 if self.training else 0", False)])
def test_eval_mode_meets_drawn_parameters_too(verifier, make_task, affine, ok):
    """Red team round 12 (eval_mode_default_affine): the eval-mode trial ran on the model as built (a LayerNorm's
    weight 1, bias 0), so a kernel that dropped the affine in eval mode passed. The first perturbed-parameter trial
    runs in eval mode as well."""
    task = make_task("layer_norm_default_affine", LAYER_NORM_TASK)
    v = verifier.verify(task, LAYER_NORM_AFFINE_IN_TRAINING_ONLY.replace("AFFINE", affine))
    assert v.feasible is ok, v.feedback[:600]
    if not ok:
        assert v.feedback.startswith("trial 11 (perturbed parameters, special inputs) (eval mode)"), v.feedback[:300]
