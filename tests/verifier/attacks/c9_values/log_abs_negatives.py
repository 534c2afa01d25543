"""Class 9 - values that switched correctness off: log(|x|) instead of log(x). On the task's positive
inputs both agree; the negated trial makes the reference NaN everywhere, and a trial whose reference held
a NaN used to be skipped, so the finite answers where NaN is due were never seen. Defence: NaN/Inf are
judged position by position (NaN where the reference is NaN, the same signed Inf where it is Inf)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void log_abs(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::log(std::fabs(x[i]));
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.log_abs(x, out, x.numel())
        return out
