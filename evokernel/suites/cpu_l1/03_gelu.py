"""Exact (erf-based) GELU activation elementwise: 0.5 * x * (1 + erf(x / sqrt(2)))."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x, approximate="none")


batch_size = 384
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
