"""Reverse (suffix) cumulative sum along dim=1: out[i] = sum of x[j] for j >= i."""
import torch
import torch.nn as nn

CATEGORY = "scan"


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)


batch_size = 768
length = 4096
scan_dim = 1


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return [scan_dim]
