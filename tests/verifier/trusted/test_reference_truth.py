"""The reference worker's float64 answer (`Reference.truth`) carries the forward's working scale, from which
the correctness gate derives the rounding-noise floor of an output that cancels to (near) zero."""
from __future__ import annotations

import textwrap

import pytest
import torch

from evokernel.tasks.load import load_task
from evokernel.verifier.trusted.correctness import Exact

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """GroupNorm then the mean over everything but the batch (KernelBench level2 23's tail): exactly 0."""
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(4, 8)

    def forward(self, x):
        h = x * 50.0  # the largest tensor of the forward: RMS 50 on shifted inputs of RMS ~1
        return self.norm(h).mean(dim=(1, 2, 3))

def get_inputs():
    return [torch.randn(2, 8, 6, 6)]

def get_init_inputs():
    return []
'''


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "gn_mean.py"
    path.write_text(textwrap.dedent(TASK))
    return load_task(path)


def test_truth_is_float64_with_the_largest_intermediate_rms(verifier, task):
    ref = verifier._pool.get(task)
    ref.init(0)
    answers = ref.truth(7, "none")
    assert len(answers) == 1 and isinstance(answers[0], Exact)
    exact = answers[0]
    assert exact.value.dtype == torch.float64 and tuple(exact.value.shape) == (2,)
    assert float(exact.value.abs().max()) < 1e-12  # float64 cancels to ~0 where float32 leaves ~1e-8
    assert 40 < exact.scale < 60  # the RMS of x * 50, not of the input (~1) nor of the output (~0)
    shifted = ref.truth(7, "shift")[0]  # x + 3: the scaled tensor's RMS grows to ~50 * sqrt(10)
    assert 140 < shifted.scale < 180


LINEAR = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 8)

    def forward(self, x):
        return self.lin(x)

def get_inputs():
    return [torch.randn(4, 64)]

def get_init_inputs():
    return []
'''


def _outputs(ref, seed):
    from evokernel.verifier.trusted import regions

    ref.make_inputs(seed, "none")
    metas, _ = ref.run()
    return [regions.tensor(ref.handle, m) for m in metas]


def test_truth_follows_the_model_of_the_current_verdict(verifier, tmp_path):
    # a warm reference serves many verdicts, each with its own secret init seed: the float64 copy of the model
    # must be the current one (it was made once and kept, so later verdicts were judged against old weights)
    path = tmp_path / "linear.py"
    path.write_text(textwrap.dedent(LINEAR))
    ref = verifier._pool.get(load_task(path))
    for init_seed in (1, 2):
        ref.init(init_seed)
        out = _outputs(ref, 7)[0]
        exact = ref.truth(7, "none")[0].value
        assert float((exact - out.double()).abs().max()) < 1e-5, init_seed


def test_perturbed_parameters_move_a_degenerate_answer_away_from_zero(verifier, task):
    ref = verifier._pool.get(task)
    ref.init(0)
    default = _outputs(ref, 7)[0]
    assert float(default.abs().max()) < 1e-5  # GroupNorm's weight 1, bias 0: the mean is 0
    ref.init(0, params_seed=123)
    drawn = _outputs(ref, 7)[0]
    assert float(drawn.abs().min()) > 1e-3  # drawn weight and bias: the skipped work shows
    exact = ref.truth(7, "none")[0].value
    assert float((exact - drawn.double()).abs().max()) < 1e-5  # the float64 answer is that model's too
    ref.init(0, params_seed=123)
    assert torch.equal(_outputs(ref, 7)[0], drawn)  # the same secret seed, the same parameters
    ref.init(0)
    assert torch.equal(_outputs(ref, 7)[0], default)
