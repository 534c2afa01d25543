"""ReLU wrong for every x < -1e4 (it answers |x|): with one row in the last dimension, no negative large value is
ever planted.

CLASS: c2_values
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=1 dim=65536
SUCCESS: feasible
NEW: yes (the newest code: trial_inputs' stratified draws and one large value per row)
The trick: `_plant_singles` plants large values at most one per row of the last dimension, and `_log_uniform` gives
them alternating signs *starting with +*. An input with a single row (a 1-D signal, a batch of one, a (1, N) vector)
gets exactly one large value per trial, always positive. Negative values come only from the draws: randn, x4, negate,
shift, heavy (x100-1000 on ~0.1%: at most ~ -5e3). So nothing below ~ -5e3 is ever seen. Expected: feasible.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) { float v = x[i]; y[i] = v < -1e4f ? -v : (v < 0.f ? 0.f : v); }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
