"""Class 4 - timing can be gamed, on a scalar loss: cross-entropy needs each row's logsumexp plus one
logit per row, and the timed logits are rotations of one base tensor. The kernel finds the rotation
with one index lookup, takes every rotated row's logsumexp from per-row prefix/suffix logsumexps of
the base (the tail of one row plus the head of the next) and reads the target's logit from the input
itself: O(rows) work instead of O(rows x classes), every timed loss exact. Defences: timed inputs
drawn fresh from secret seeds; a physics floor on bytes moved."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

static std::vector<float> base;
static std::vector<int64_t> slot_pos;
static std::vector<uint32_t> slot_key;
static std::vector<double> pre, suf;   // per row: lse of the first c / of the last D - c elements
static int64_t R = 0, C = 0;
static const int64_t K = 64;

static uint32_t bits(float v) { uint32_t b; memcpy(&b, &v, 4); return b; }
static uint64_t mix(uint32_t b) { return (uint64_t)b * 0x9E3779B97F4A7C15ull; }
static double lae(double a, double b) {            // log(exp(a) + exp(b))
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

static void remember(const float* x, int64_t rows, int64_t cols) {
    R = rows; C = cols;
    base.assign(x, x + rows * cols);
    pre.clear(); suf.clear();
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

static float row_lse(const float* r, int64_t D) {
    float m = -INFINITY;
    for (int64_t c = 0; c < D; ++c) m = r[c] > m ? r[c] : m;
    double acc = 0.0;
    for (int64_t c = 0; c < D; ++c) acc += std::exp((double)(r[c] - m));
    return (float)(m + std::log(acc));
}

extern "C" void cross_entropy(const float* x, const int64_t* y, float* out, int64_t B, int64_t D) {
    const int64_t n = B * D;
    int64_t s = (R == B && C == D && !base.empty()) ? find_shift(x, n) : -1;
    double loss = 0.0;
    int64_t count = 0;  // targets other than ignore_index (-100), which the trials plant
    for (int64_t b = 0; b < B; ++b) count += y[b] != -100;
    if (s < 0) {
        for (int64_t b = 0; b < B; ++b)
            if (y[b] != -100) loss += row_lse(x + b * D, D) - x[b * D + y[b]];
        out[0] = (float)(loss / (double)count);
        remember(x, B, D);
        return;
    }
    if (pre.empty()) {
        pre.assign(B * (D + 1), -INFINITY);
        suf.assign(B * (D + 1), -INFINITY);
        for (int64_t b = 0; b < B; ++b) {
            const float* r = base.data() + b * D;
            for (int64_t c = 0; c < D; ++c) pre[b * (D + 1) + c + 1] = lae(pre[b * (D + 1) + c], r[c]);
            for (int64_t c = D - 1; c >= 0; --c) suf[b * (D + 1) + c] = lae(suf[b * (D + 1) + c + 1], r[c]);
        }
    }
    const int64_t q = s / D, r = s % D;
    for (int64_t b = 0; b < B; ++b) {
        const int64_t head = ((b - q) % B + B) % B, tail = ((b - q - 1) % B + B) % B;
        if (y[b] != -100) loss += lae(suf[tail * (D + 1) + (D - r)], pre[head * (D + 1) + (D - r)]) - x[b * D + y[b]];
    }
    out[0] = (float)(loss / (double)count);
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        x, y = logits.contiguous(), targets.contiguous()
        out = torch.empty(())
        lib.cross_entropy(x, y, out, x.shape[0], x.shape[1])
        return out
