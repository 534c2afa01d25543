"""Cumulative sum of int64 counts along the last dimension."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1)


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randint(0, 1000, (batch_size, dim), dtype=torch.int64)]


def get_init_inputs():
    return []
