"""ReLU whose output has an extra leading dimension of 1: shape (1, 16, 4096) where the task answers (16, 4096).

Trick (worker/parent protocol): a comparison that broadcasts, or flattens before comparing, would accept an
output of another shape with the same elements; a user indexing out[i] then gets the whole batch. A probe.
Task: evokernel/suites/cpu_l1/01_relu.py at 16 x 4096. Expected: refused (shape differs).
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16,dim=4096
KIND: attack
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) { const float v = x[i]; y[i] = v < 0.0f ? 0.0f : v; }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out.unsqueeze(0)
