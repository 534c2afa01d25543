"""Matrix-vector product y = A @ x with A of shape (M, K) and x of shape (K, 1)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)


m = 4096
k = 4096


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, 1)]


def get_init_inputs():
    return []
