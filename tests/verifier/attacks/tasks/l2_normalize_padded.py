"""Rows divided by their L2 norm, in a batch whose last rows are padding (all zeros). A padding row's
norm is 0, so the reference is NaN (0/0) on those rows and finite on every other row."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.linalg.vector_norm(x, dim=1, keepdim=True)


batch_size = 256
dim = 1024
padding = 32


def get_inputs():
    x = torch.randn(batch_size, dim)
    x[batch_size - padding:] = 0.0
    return [x]


def get_init_inputs():
    return []
