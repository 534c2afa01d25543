"""Class 3 - native rules are regexes: the rule bans `std::thread`, but after `using namespace std;` a
plain `thread` is the same class. The kernel runs on raw threads of its own, outside the OpenMP
runtime and the thread policy the verifier times both sides at. Defence: the binary judge (thread
creation is not on the allow-list of undefined symbols)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <thread>
using namespace std;

static void part(const float* x, float* y, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

extern "C" void relu(const float* x, float* y, int64_t n) {
    thread helper(part, x, y, n / 2, n);
    part(x, y, 0, n / 2);
    helper.join();
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
