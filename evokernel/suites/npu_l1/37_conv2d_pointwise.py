"""Pointwise (1x1) 2-D convolution without bias (NCHW, float32): a channel mix, nn.Conv2d(32, 48, 1, bias=False)."""
import torch
import torch.nn as nn

CATEGORY = "convolution"


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)

    def forward(self, x):
        return self.conv(x)


batch_size = 4
in_channels = 32
out_channels = 48
height = 28
width = 30


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
