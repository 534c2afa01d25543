"""Mish activation elementwise: x * tanh(softplus(x))."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.mish(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
