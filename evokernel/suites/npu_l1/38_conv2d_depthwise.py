"""Depthwise 2-D convolution, 3x3 kernel, stride 1, padding 1, with bias (groups = channels, float32)."""
import torch
import torch.nn as nn

CATEGORY = "convolution"


class Model(nn.Module):
    def __init__(self, channels, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, stride=stride, padding=kernel_size // 2,
                              groups=channels)

    def forward(self, x):
        return self.conv(x)


batch_size = 2
channels = 64
height = 48
width = 50


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, 3, 1]
