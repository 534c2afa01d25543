"""1-D convolution, kernel 5, stride 1, padding 2, dilation 2, with bias (N, C, L; float32): nn.Conv1d(24, 40, 5)."""
import torch
import torch.nn as nn

CATEGORY = "convolution"


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=1, padding=2, dilation=2)

    def forward(self, x):
        return self.conv(x)


batch_size = 8
in_channels = 24
out_channels = 40
length = 1003


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, 5]
