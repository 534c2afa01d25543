"""2-D average pooling with a 3x3 window, stride 2 and padding 1 on an (N, C, H, W) tensor."""
import torch
import torch.nn as nn

CATEGORY = "pooling"


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


batch_size = 16
channels = 64
height = 64
width = 64
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
