"""2-D convolution, 3x3 kernel, stride 1, padding 1, with bias (NCHW, float32): nn.Conv2d(16, 32, 3, padding=1)."""
import torch
import torch.nn as nn

CATEGORY = "convolution"


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


batch_size = 2
in_channels = 16
out_channels = 32
height = 40
width = 45


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3]
