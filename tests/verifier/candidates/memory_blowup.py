"""Runtime: the native kernel allocates (and touches) 256 GiB; std::bad_alloc escapes the extern "C"
function and terminates the worker (or the memory limit kills it)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstddef>
#include <vector>
extern "C" void relu(const float* x, float* y, int64_t n) {
    std::vector<float> big((std::size_t)1 << 36);
    for (std::size_t i = 0; i < big.size(); i += 1024) big[i] = 1.0f;  // touch every page
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] < 0.0f ? 0.0f : x[i]) * big[(std::size_t)i << 10];
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
