"""Class 1 (native code reaches PyTorch's compute through the operators it may call): load_inline C++ that
lets ATen's copy kernel do the task.

Trick: a load_inline object may reach `at::_ops::<op>::call` for the operators that "only allocate, view or
copy" (expand, reshape/_unsafe_view, clone, contiguous, copy_). Nearest upsampling is exactly a broadcast copy,
so the C++ builds x.unsqueeze(3).unsqueeze(5).expand(...).reshape(...) and returns it: every output byte is
written by ATen's TensorIterator copy, none by the candidate's code.
Expected: feasible (PyTorch doing all the work from inside the "native" kernel).
Answered (final run, 2026-11-28): feasible (SUCCEEDED).
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor upsample2x(torch::Tensor x) {
    auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    return x.unsqueeze(3).unsqueeze(5).expand({n, c, h, 2, w, 2}).reshape({n, c, 2 * h, 2 * w});
}
"""

ext = load_inline(name="rt_upsample", cpp_sources=CPP, functions=["upsample2x"], extra_cflags=["-O2"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.upsample2x(x.contiguous())
