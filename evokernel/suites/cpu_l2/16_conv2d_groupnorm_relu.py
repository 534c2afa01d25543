"""3x3 convolution, GroupNorm (random affine), then ReLU."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.GroupNorm(num_groups, out_channels)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(out_channels))
            self.norm.bias.copy_(0.5 * torch.randn(out_channels))

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


batch_size = 16
in_channels = 16
out_channels = 32
kernel_size = 3
num_groups = 8
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
