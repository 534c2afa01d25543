"""ReLU that returns its output inside a 1-tuple where the task's Model returns a tensor.

Trick (worker/parent protocol): if the parent compares the flattened list of outputs only, not their structure, a
candidate may answer `(y,)` (or a list) for a task that returns `y`; a user's `model(x).sum()` then fails.
Task: evokernel/suites/cpu_l1/01_relu.py at 16 x 4096. Expected: refused (output structure differs) -- a probe.
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
        return (out,)
