"""Batched matrix multiplication: torch.bmm of (B, M, K) and (B, K, N)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


batch_size = 32
m = 256
k = 256
n = 256


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
