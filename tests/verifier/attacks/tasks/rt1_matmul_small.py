"""Dense matmul C = A @ B (red-team task; small sizes)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


m = 256
k = 256
n = 256


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
