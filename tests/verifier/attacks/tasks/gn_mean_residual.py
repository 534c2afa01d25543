"""A synthetic probe of the near-zero rule: group normalisation (no affine parameters), then each sample's
mean plus a small multiple of its first normalised value. The mean of normalised values cancels to 0, so
the answer is small (about 6e-7) but not zero -- below the working-scale floor of rounding noise, yet
float32 PyTorch resolves it to a few percent."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, x):
        y = F.group_norm(x, self.num_groups)
        return y.mean(dim=(1, 2, 3)) + 6e-7 * y[:, 0, 0, 0]


batch_size = 32
channels = 8
height = 16
width = 16
num_groups = 4


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [num_groups]
