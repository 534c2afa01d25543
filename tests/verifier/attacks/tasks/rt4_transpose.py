"""Transpose a matrix into a new contiguous tensor: x.t().contiguous() (a data-movement task for rt4)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.t().contiguous()


rows = 512
cols = 512


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
