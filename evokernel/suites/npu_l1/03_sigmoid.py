"""Sigmoid activation elementwise: 1 / (1 + exp(-x))."""
import torch
import torch.nn as nn

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
