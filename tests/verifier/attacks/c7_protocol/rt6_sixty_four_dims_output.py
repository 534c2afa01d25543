"""forward answers with a 64-dimensional view of its output (62 leading dims of size 1).

The trick: the reply describes the output's shape in the control message; 64 dims is PyTorch's maximum and more
than any task has. The wire schema bounds lists; a shape beyond its bound must be refused cleanly (correctness:
shape mismatch), not as an exception out of the parent or a forged-frame 'hack' (criterion c only for a crash).

CLASS: c5_protocol
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16 dim=4096
SUCCESS: not_feasible_crash
NEW: yes
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cstdio>
#include <cstring>

extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
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
        return out.view(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 16, 4096)
