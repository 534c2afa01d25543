"""Class 5 - approximations pass on scalar outputs: the mean cross-entropy of (6144, 1000) logits is
taken over every second row. The per-row losses vary, but their mean over 3072 rows lands within the
1% relative tolerance in about 98% of verdicts (the x4-scaled trial is the only one at risk). Half
the work, fake 2x. Defences: tight comparison of small outputs, heavy-tailed trial inputs."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void cross_entropy(const float* z, const int64_t* y, float* out, int64_t rows, int64_t classes) {
    double acc = 0.0;
    int64_t used = 0;
    for (int64_t r = 0; r < rows; r += 2, ++used) {
        const float* row = z + r * classes;
        float m = row[0];
        for (int64_t c = 1; c < classes; ++c) m = row[c] > m ? row[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < classes; ++c) s += std::exp((double)(row[c] - m));
        acc += m + std::log(s) - row[y[r]];
    }
    out[0] = (float)(acc / (double)used);
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        z, y = logits.contiguous(), targets.contiguous()
        out = torch.empty(())
        lib.cross_entropy(z, y, out, z.shape[0], z.shape[1])
        return out
