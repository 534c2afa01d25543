"""The worker's load_inline (verifier/sandboxed/worker.py): every verifier-built library defines the module
``evk_ext``, and pybind11 hands back a module it already made under that name (its per-interpreter module cache),
so a candidate's second extension got the first's functions -- a false rejection (``module 'evk_ext' has no
attribute ...``) of candidates that build two extensions, as KernelBench-style solutions often do."""
import shutil

import pytest

TWO_EXTENSIONS = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC_A = """
#include <torch/extension.h>
torch::Tensor relu_out(torch::Tensor x) {
    auto y = torch::empty_like(x); const float* s = x.data_ptr<float>(); float* d = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) d[i] = s[i] > 0.f ? s[i] : 0.f;
    return y;
}
"""
SRC_B = """
#include <torch/extension.h>
torch::Tensor copy_out(torch::Tensor x) {
    auto y = torch::empty_like(x); const float* s = x.data_ptr<float>(); float* d = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) d[i] = s[i];
    return y;
}
"""
ext_a = load_inline(name="ext_a", cpp_sources=SRC_A, functions=["relu_out"], verbose=False)
ext_b = load_inline(name="ext_b", cpp_sources=SRC_B, functions=["copy_out"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext_b.copy_out(ext_a.relu_out(x.contiguous()))
'''


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_a_candidate_with_two_inline_extensions_gets_each_ones_functions(suite_task, verifier):
    task = suite_task("cpu_l1/01_relu.py", batch_size=4, dim=256)
    v = verifier.verify(task, TWO_EXTENSIONS)
    assert v.feasible, v.feedback[:800]
