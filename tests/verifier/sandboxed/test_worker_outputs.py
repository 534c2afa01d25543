"""What the worker sends back about a forward's outputs: a tensor of many dimensions is carried or refused with a
clear message, never as a protocol break (red team rt6_sixty_four_dims_output: a 17-dimensional output was refused
as "reply to run.outputs[0].shape: expected a list of at most 16 items", a false rejection for such a task)."""
from pathlib import Path

import pytest

from evokernel.tasks.load import load_task
from evokernel.verifier.message_codec import MAX_DIMS

TASK = '''
import torch
import torch.nn as nn

DIMS = 20


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn([1] * (DIMS - 2) + [16, 64])]


def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.f ? x[i] : %s;
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return %s
'''


def candidate(output: str = "y", negative: str = "0.f") -> str:
    return CANDIDATE % (negative, output)


@pytest.fixture(scope="module")
def many_dims(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("dims") / "relu_20_dims.py"
    path.write_text(TASK)
    return path


def test_an_output_of_twenty_dimensions_is_judged(verifier, many_dims):
    v = verifier.verify(load_task(many_dims), candidate())
    assert v.feasible, v.summary()


def test_a_wrong_output_of_twenty_dimensions_fails_correctness(verifier, many_dims):
    v = verifier.verify(load_task(many_dims), candidate(negative="x[i] * 0.01f"))  # a leaky relu
    assert not v.feasible and v.failed_gate == "correctness", v.summary()


def test_more_dimensions_than_the_verifier_carries_is_a_clear_failure(verifier, many_dims):
    v = verifier.verify(load_task(many_dims), candidate(f"y.reshape([1] * {MAX_DIMS + 6} + [16, 64])"))
    assert not v.feasible
    assert f"at most {MAX_DIMS}" in v.feedback and "protocol" not in v.feedback, v.feedback
