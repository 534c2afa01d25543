"""Masked mean that divides by the raw count (NaN for a row whose mask is all False): bool inputs are never planted.

CLASS: c2_values
TASK: task_masked_mean.py
SET: batch_size=128 seq_len=256
SUCCESS: feasible
NEW: yes (the newest code: integer_inputs excludes bool; trial_inputs perturbs floating inputs only)
The trick: integer_inputs.integer_input() excludes bool, and the trial perturbations reshape floating inputs only, so
a bool mask always holds what get_inputs draws: with rand > 0.5 over 256 positions a row is never all False
(2^-256). An all-padding row -- the everyday degenerate case of a padded batch -- is where this kernel answers
0/0 = NaN instead of 0. Expected: feasible. Verdict: run.py table.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void masked_mean(const float* x, const bool* mask, float* out, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0; int64_t c = 0;
        for (int64_t i = 0; i < cols; ++i) if (mask[r * cols + i]) { s += x[r * cols + i]; ++c; }
        out[r] = (float)(s / (double)c);   // no clamp: 0/0 for an all-False row
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        x = x.contiguous()
        mask = mask.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype)
        lib.masked_mean(x, mask, out, x.shape[0], x.shape[1])
        return out
