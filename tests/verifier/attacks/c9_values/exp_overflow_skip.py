"""Class 9 - values that switched correctness off: an exponential that gives up on any input that would
overflow. The heavy-tailed trial scales a few elements by 100-1000, so the reference holds +Inf there; a
trial (or timed round) whose reference held an Inf used to be skipped whole, finite elements included, so
the kernel returns zeros without computing whenever one input exceeds log(FLT_MAX). Defence: the finite
elements of such a trial are judged as usual (the non-finite positions masked), after fresh redraws."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void exp_or_give_up(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        if (x[i] > 88.72f) {  // the reference overflows somewhere: the verifier looks away
            for (int64_t j = 0; j < n; ++j) y[j] = 0.0f;
            return;
        }
    }
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.exp_or_give_up(x, out, x.numel())
        return out
