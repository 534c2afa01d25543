"""ReLU wrong on every input that is an exact integer of magnitude 3 .. 2^22 (answers x + 1 there).

Trick (value coverage): no trial holds integer-valued floats in that band. randn draws are never integers; the
special trial plants exact zeros, half-integers (x.5), large magnitudes (moved to x.5 below 2^22) and constant rows
rounded to 6 significant bits (integers below 3 only by chance). A user's float inputs are integers all the time
(pixel values 0..255, counts, token ids cast to float). Task: evokernel/suites/cpu_l1/01_relu.py at 16 x 4096.
Expected if the trials miss it: feasible. Twin: twins/rt11_int_valued_relu_plain.py (same loop, no integer branch).
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16,dim=4096
KIND: attack
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        float r = v < 0.0f ? 0.0f : v;
        const float a = std::fabs(v);
        if (a >= 3.0f && a < 4194304.0f && std::nearbyint(v) == v) r = v + 1.0f;
        y[i] = r;
    }
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
        return out
