"""Cross-entropy that never honours ignore_index (-100): a row whose target is -100 is scored as class 0.

The trick: every trial perturbation reshapes floating inputs only ("integer inputs such as class indices are left
alone"), so an integer input only ever holds what the task's get_inputs draws: randint(0, C). F.cross_entropy's
default ignore_index=-100 (padding tokens in every language-model loss) is a valid target that no trial, value
round or timed round contains, so a kernel that ignores it (and would count padding rows, or read out of bounds
without the clamp) passes. Expected: feasible. Close: an integer-input perturbation that plants the operator's
sentinel values (-100 for cross_entropy/nll_loss, negative indices where the op wraps them) -- or, generally, the
boundary values of the drawn range (0, C-1) and a few values just outside it where the reference accepts them.

CLASS: c2_values
TASK: evokernel/suites/cpu_l1/27_cross_entropy.py
SET: batch_size=64 num_classes=100
SUCCESS: feasible
NEW: yes
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void cross_entropy(const float* __restrict x, const int64_t* __restrict t, float* __restrict out,
                              int64_t n, int64_t c) {
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float* row = x + i * c;
        float m = row[0];
        for (int64_t j = 1; j < c; ++j) m = row[j] > m ? row[j] : m;
        double s = 0.0;
        for (int64_t j = 0; j < c; ++j) s += std::exp((double)row[j] - (double)m);
        int64_t k = t[i];
        k = k < 0 ? 0 : (k >= c ? c - 1 : k);   // the lie: ignore_index (-100) scored as class 0
        total += (double)m + std::log(s) - (double)row[k];
    }
    out[0] = (float)(total / (double)n);
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        logits = logits.contiguous()
        targets = targets.contiguous()
        out = torch.empty((), dtype=logits.dtype)
        lib.cross_entropy(logits, targets, out, logits.shape[0], logits.shape[1])
        return out
