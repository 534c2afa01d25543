"""Nearest-neighbour upsampling by 2 in H and W (red-team task; small sizes)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="nearest")


batch_size = 8
channels = 16
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
