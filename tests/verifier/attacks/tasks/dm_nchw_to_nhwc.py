"""NCHW to NHWC (a permutation of the layout; data movement only; issue 28, small sizes)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.permute(0, 2, 3, 1).contiguous()


batch_size = 4
channels = 16
height = 24
width = 24


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
