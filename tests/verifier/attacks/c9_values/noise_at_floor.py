"""Class 9 - values that switched correctness off: where the exact answer is small (~6e-7 here) and float32
PyTorch misses it by more than the tight bound of reductions, the float64 second opinion allowed rounding
noise of the working scale (8 unit roundings of the largest intermediate RMS per element, ~1.6e-6 here).
An answer near 0 is inside that floor wherever the exact one is, so the kernel reads one input value per
sample, scales it to noise and skips the normalisation. Defence: the floor is granted only where float32
cannot resolve the answer (within 8x PyTorch's own error of 0) or the candidate carries it (within half
of its size); noise, constants and scaled inputs are as far from the answer as 0 is."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void floor_noise(const float* x, float* y, int64_t batch, int64_t per_sample) {
    for (int64_t b = 0; b < batch; ++b) y[b] = 1e-7f * (x[(b + 1) * per_sample - 1] - 0.5f);
}
""")


class ModelNew(nn.Module):
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty((x.shape[0],), dtype=torch.float32)
        lib.floor_noise(x, out, x.shape[0], x.numel() // x.shape[0])
        return out
