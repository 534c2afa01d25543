"""Class 6 - resources are unbounded: five lines of C++ whose three-parameter template recursion makes
g++ instantiate ~2 million classes while evaluating one constant. The build has a wall deadline but
no memory cap: g++ grows to about 7 GB (on a 2-core machine with 23 GB shared by everyone) before it
succeeds. Defence: an address-space (or memory cgroup) limit on every build, a hit limit being a
`compile` verdict."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
template <int A, int B, int C> struct G {
    static constexpr unsigned v = G<A - 1, B, C>::v * 3u + G<A, B - 1, C>::v + G<A, B, C - 1>::v;
};
template <int B, int C> struct G<0, B, C> { static constexpr unsigned v = 1; };
template <int A, int C> struct G<A, 0, C> { static constexpr unsigned v = 2; };
template <int A, int B> struct G<A, B, 0> { static constexpr unsigned v = 3; };
extern "C" unsigned seed(int unused) { return G<125, 125, 125>::v; }
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
