"""Cumulative sum along dim 1 (the Cumsum sample of Ascend's samples takes the axis as an int32 tensor input,
which only the kernel reads; exclusive and reverse at their defaults)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, exclusive=False, reverse=False):
        super().__init__()
        self.exclusive, self.reverse = exclusive, reverse

    def forward(self, x, axis):
        return torch.cumsum(x, dim=1)


rows = 32
cols = 256


def get_inputs():
    return [torch.randn(rows, cols), torch.tensor([1], dtype=torch.int32)]


def get_init_inputs():
    return []
