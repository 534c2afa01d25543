"""Elementwise add of two (N, C, H, W) tensors, ReLU, then 2x2 max pooling with stride 2."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return F.max_pool2d(torch.relu(a + b), kernel_size=2, stride=2)


batch_size = 16
channels = 32
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, channels, height, width), torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
