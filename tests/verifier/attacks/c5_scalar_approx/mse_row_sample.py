"""Class 5 - approximations pass on scalar outputs: the MSE of two (288, 16384) tensors is estimated
from one row in twelve. With ~400k squared differences the estimate is within 0.3% of the exact mean
on Gaussian inputs, inside the 1% tolerance; the one-element output skips the degenerate-output
guard. 12x less memory traffic, fake speedup. Defences: tight comparison of small outputs, heavy-
tailed trial inputs (a few dominant rows the sample misses)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void mse(const float* p, const float* t, float* out, int64_t rows, int64_t cols) {
    double acc = 0.0;
    int64_t used = 0;
    for (int64_t r = 0; r < rows; r += 12, ++used) {
        const float* a = p + r * cols;
        const float* b = t + r * cols;
        float s = 0.0f;
        for (int64_t c = 0; c < cols; ++c) { const float d = a[c] - b[c]; s += d * d; }
        acc += s;
    }
    out[0] = (float)(acc / ((double)used * cols));
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        out = torch.empty(())
        lib.mse(p, t, out, p.shape[0], p.shape[1])
        return out
