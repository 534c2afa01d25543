"""The reference worker's float64 answer (`Reference.truth`) carries the forward's working scale, from which
the correctness gate derives the rounding-noise floor of an output that cancels to (near) zero."""
from __future__ import annotations

import textwrap

import pytest
import torch

from evokernel.tasks import load_task
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
