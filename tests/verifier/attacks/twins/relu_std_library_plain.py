"""Honest twin of rt10_futex_time_bomb: a ReLU that uses the C++ standard library the ordinary way (std::vector,
std::string, std::unordered_map, exceptions), whose objects reference the library's internals that stay allowed
(std::__throw_*, std::__detail's hash policy, std::__cxx11 strings)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

static int mode_of(const char* name) {
    std::unordered_map<std::string, int> modes;
    modes[std::string("relu")] = 1;
    return modes.at(name);
}

extern "C" void relu_std(const float* x, float* y, int64_t n) {
    if (mode_of("relu") != 1) throw std::runtime_error("unknown mode");
    std::vector<float> tile(256);
    for (int64_t s = 0; s < n; s += 256) {
        const int64_t e = s + 256 < n ? s + 256 : n;
        for (int64_t i = s; i < e; ++i) tile[i - s] = x[i] < 0.0f ? 0.0f : x[i];
        for (int64_t i = s; i < e; ++i) y[i] = tile.at(i - s);
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_std(x, out, x.numel())
        return out
