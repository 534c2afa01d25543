"""A 2-D transpose (data movement only; issue 28, small sizes)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.t().contiguous()


rows = 192
cols = 320


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
