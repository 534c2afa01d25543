"""Honest twin of rt10_linemarker_behind_raw_string: a ReLU whose source holds C++ raw string literals (a quote
inside, a custom delimiter, a u8 prefix, text that looks like a comment and a line marker) and a digit separator.
Raw strings are ordinary C++: the source scans must read them as the compiler does, not refuse them."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstdio>
static const char* kName = R"(relu ")";
static const char* kNote = u8R"doc(a "raw" note /* not a comment */
# 1 "not a line marker, just text"
)doc";
static const int64_t kChunk = 1'024;

extern "C" void relu_raw(const float* x, float* y, int64_t n) {
    if (n < 0) std::fprintf(stderr, "%s%s: negative size\n", kName, kNote);
    for (int64_t s = 0; s < n; s += kChunk) {
        const int64_t e = s + kChunk < n ? s + kChunk : n;
        for (int64_t i = s; i < e; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_raw(x, out, x.numel())
        return out
