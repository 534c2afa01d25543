"""Honest twin of rt10_flag_w_date_time_bomb: a ReLU built with warning and standard flags that stay allowed
(-Wall, -Wextra, -Wno-unused-parameter, -std=gnu++14, -std=c++17): only -w, -Wno-error... and -Wno-date-time (which
would turn -Werror=date-time off) and the ISO modes before C++17 (trigraphs) are refused."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu_flags(const float* x, float* y, int64_t n, int64_t unused) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""", extra_cflags=["-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu++14", "-std=c++17"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_flags(x, out, x.numel(), 0)
        return out
