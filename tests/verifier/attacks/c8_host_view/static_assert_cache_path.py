"""Class 8 - the sandbox sees the host: the compiler itself quotes a host path. `__FILE__` is the full path of
the source file in its build folder, and the build folder lies in the verifier's build cache (under $HOME by
default); a failing `static_assert` whose message is `__FILE__` makes g++ print that path in the diagnostics,
and the `compile` verdict quotes them (the location prefix is trimmed to `kernel.cpp:3:`, the message is not).
Defence: every verdict's feedback and details pass a final scrub that replaces the build cache, the package
folder and $HOME with placeholders (<cache>, <evokernel>, ~)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
static_assert(sizeof(int) == 3, __FILE__);

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
