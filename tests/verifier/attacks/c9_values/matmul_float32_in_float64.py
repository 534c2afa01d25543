"""Class 9 - values that switched correctness off: a float64 matrix product computed in float32 (inputs
rounded to float, float accumulation) and widened on output: half the memory traffic and twice the SIMD
width. Its ~1e-6 relative error passed the 1e-2 tolerance every dtype shared. Defence: tolerances follow
the output dtype (float64: 1e-9 elementwise, 1e-10 norm-wise for reductions)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <vector>
extern "C" void matmul_f32(const double* a, const double* b, double* c, int64_t m, int64_t k, int64_t n) {
    std::vector<float> af(a, a + m * k), bf(b, b + k * n), row(n);
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
        for (int64_t p = 0; p < k; ++p) {
            const float x = af[i * k + p];
            const float* bp = bf.data() + p * n;
            for (int64_t j = 0; j < n; ++j) row[j] += x * bp[j];
        }
        for (int64_t j = 0; j < n; ++j) c[i * n + j] = (double)row[j];
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float64)
        lib.matmul_f32(a, b, out, a.shape[0], a.shape[1], b.shape[1])
        return out
