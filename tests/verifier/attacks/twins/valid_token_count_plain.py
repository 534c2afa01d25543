"""Honest twin of c9_values/rt8_sentinel_only_in_untied_skip.py: per row, the labels that are not -100."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void count_valid(const int64_t* labels, int64_t* out, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        int64_t c = 0;
        for (int64_t i = 0; i < cols; ++i) c += labels[r * cols + i] != -100;
        out[r] = c;
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, labels):
        labels = labels.contiguous()
        out = torch.empty(labels.shape[0], dtype=torch.int64)
        lib.count_valid(labels, out, labels.shape[0], labels.shape[1])
        return out
