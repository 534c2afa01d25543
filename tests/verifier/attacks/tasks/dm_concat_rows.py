"""Concatenation of two matrices along the rows (data movement only; issue 28, small sizes)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.cat([a, b], dim=0)


rows_a = 96
rows_b = 160
cols = 256


def get_inputs():
    return [torch.randn(rows_a, cols), torch.randn(rows_b, cols)]


def get_init_inputs():
    return []
