"""Class 9 - values that switched correctness off: KernelBench level2 23 (Conv3d, GroupNorm, mean). With
GroupNorm's default affine parameters (weight 1, bias 0) the mean of each normalised sample is exactly 0,
float32 PyTorch answers rounding noise, and the float64 second opinion allowed a floor of rounding noise
on the working scale. So the kernel skips the convolution and the normalisation and returns a tiny value
read off the input (not zeros, not a constant, not a copy: the degenerate-output guard does not fire).
Defence: one trial builds both models with their constant initialisers drawn at random (GroupNorm weight
in [0.5, 1.5], bias in [-0.5, 0.5]), where the answer is far from 0; timing uses those models too."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void near_zero(const float* x, float* y, int64_t batch, int64_t per_sample) {
    for (int64_t b = 0; b < batch; ++b) y[b] = 1e-9f * (x[b * per_sample] - 0.5f);
}
""")


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty((x.shape[0],), dtype=torch.float32)
        lib.near_zero(x, out, x.shape[0], x.numel() // x.shape[0])
        return out
