"""Class 5 - approximations pass on scalar outputs: the MSE is estimated from every 16th element (a
strided sample over all rows rather than whole rows). ~300k squared differences give an estimate
well inside the 1% relative tolerance on Gaussian inputs. Defences: tight comparison of small
outputs, heavy-tailed trial inputs (a few dominant elements the stride skips)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void mse(const float* p, const float* t, float* out, int64_t n) {
    double acc = 0.0;
    int64_t used = 0;
    for (int64_t i = 5; i < n; i += 16, ++used) { const double d = (double)p[i] - t[i]; acc += d * d; }
    out[0] = (float)(acc / (double)used);
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        out = torch.empty(())
        lib.mse(p, t, out, p.numel())
        return out
