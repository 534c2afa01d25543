"""SiLU of one input plus a residual: x * sigmoid(x) + y."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x * torch.sigmoid(x) + y


batch_size = 255
dim = 1003


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
