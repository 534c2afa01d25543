"""Matrix multiplication with a transposed right operand: C = A @ B.T, A (M, K), B (N, K)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b.T)


m = 1024
k = 512
n = 1024


def get_inputs():
    return [torch.randn(m, k), torch.randn(n, k)]


def get_init_inputs():
    return []
