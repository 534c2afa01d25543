"""Elementwise division a / b, with divisors kept away from zero (|b| in [0.5, 1.5))."""
import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a / b


batch_size = 128
dim = 1536


def get_inputs():
    a = torch.randn(batch_size, dim)
    sign = torch.randint(0, 2, (batch_size, dim)).float() * 2.0 - 1.0
    b = (0.5 + torch.rand(batch_size, dim)) * sign
    return [a, b]


def get_init_inputs():
    return []
