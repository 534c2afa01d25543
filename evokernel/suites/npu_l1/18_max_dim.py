"""Max reduction over the last dimension, returning the maximum values."""
import torch
import torch.nn as nn

CATEGORY = "reduction"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.amax(x, dim=-1)


batch_size = 1024
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
