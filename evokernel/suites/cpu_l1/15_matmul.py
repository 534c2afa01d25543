"""Dense matrix multiplication C = A @ B with A of shape (M, K) and B of shape (K, N)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


m = 1024
k = 512
n = 1024


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
