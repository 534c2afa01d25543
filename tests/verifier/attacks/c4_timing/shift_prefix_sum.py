"""Class 4 - timing can be gamed: every timed input is the same base tensor cyclically shifted by a
secret offset. The kernel keeps a copy of the first timed input and an index of its values; for each
later input it finds the offset (one lookup, checked at 32 positions) and answers the sum over dim 1
from per-column prefix sums over rows, reading O(output) instead of the input: every timed output is
right, the speedup is fake. Defences: timed inputs drawn fresh from secret seeds (the cache never
hits), a physics floor on bytes moved."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

static std::vector<float> base;            // the input the offsets are measured against
static std::vector<int64_t> slot_pos;      // open-addressing index: value bits -> position (multiples of K)
static std::vector<uint32_t> slot_key;
static std::vector<double> prefix;         // (rows + 1) x cols prefix sums over rows, built on the first hit
static int64_t R = 0, C = 0;
static const int64_t K = 64;

static uint32_t bits(float v) { uint32_t b; memcpy(&b, &v, 4); return b; }
static uint64_t mix(uint32_t b) { return (uint64_t)b * 0x9E3779B97F4A7C15ull; }

static void remember(const float* x, int64_t rows, int64_t cols) {
    R = rows; C = cols;
    base.assign(x, x + rows * cols);
    prefix.clear();
    int64_t n = rows * cols, cap = 1;
    while (cap < 4 * (n / K + 1)) cap <<= 1;
    slot_pos.assign(cap, -1);
    slot_key.assign(cap, 0);
    for (int64_t p = 0; p < n; p += K) {
        uint64_t h = mix(bits(x[p])) & (cap - 1);
        while (slot_pos[h] >= 0) h = (h + 1) & (cap - 1);
        slot_pos[h] = p; slot_key[h] = bits(x[p]);
    }
}

// the offset s with x[i] == base[(i - s) mod n], or -1
static int64_t find_shift(const float* x, int64_t n) {
    int64_t cap = (int64_t)slot_pos.size();
    for (int64_t i = 0; i < K && i < n; ++i) {
        uint32_t b = bits(x[i]);
        for (uint64_t h = mix(b) & (cap - 1); slot_pos[h] >= 0; h = (h + 1) & (cap - 1)) {
            if (slot_key[h] != b) continue;
            int64_t s = ((i - slot_pos[h]) % n + n) % n;
            bool ok = true;
            for (int64_t t = 1; t <= 32 && ok; ++t) {
                int64_t j = (t * 7919 * 131 + i) % n;
                ok = x[j] == base[((j - s) % n + n) % n];
            }
            if (ok) return s;
        }
    }
    return -1;
}

extern "C" void sum_dim1(const float* x, float* out, int64_t B, int64_t D1, int64_t D2) {
    const int64_t rows = B * D1, n = rows * D2;
    int64_t s = (R == rows && C == D2 && !base.empty()) ? find_shift(x, n) : -1;
    if (s < 0) {                                   // honest pass, and remember this input
        for (int64_t b = 0; b < B; ++b) {
            float* o = out + b * D2;
            for (int64_t k = 0; k < D2; ++k) o[k] = 0.0f;
            for (int64_t j = 0; j < D1; ++j) {
                const float* row = x + (b * D1 + j) * D2;
                for (int64_t k = 0; k < D2; ++k) o[k] += row[k];
            }
        }
        remember(x, rows, D2);
        return;
    }
    if (prefix.empty()) {
        prefix.assign((rows + 1) * D2, 0.0);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < D2; ++k) prefix[(r + 1) * D2 + k] = prefix[r * D2 + k] + base[r * D2 + k];
    }
    auto window = [&](int64_t start, int64_t col) {  // sum of D1 rows from start (mod rows) in one column
        start = ((start % rows) + rows) % rows;
        int64_t end = start + D1;
        if (end <= rows) return prefix[end * D2 + col] - prefix[start * D2 + col];
        return (prefix[rows * D2 + col] - prefix[start * D2 + col]) + prefix[(end - rows) * D2 + col];
    };
    const int64_t q = s / D2, r = s % D2;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < D2; ++k)
            out[b * D2 + k] = (float)(k >= r ? window(b * D1 - q, k - r) : window(b * D1 - q - 1, k - r + D2));
}
""")


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], x.shape[2])
        lib.sum_dim1(x, out, x.shape[0], x.shape[1], x.shape[2])
        return out
