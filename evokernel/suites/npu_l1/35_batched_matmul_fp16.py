"""Batched matrix multiplication in float16: torch.bmm(a, b), a (B, M, K) and b (B, K, N)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


batch = 6
M = 200
K = 96
N = 144


def get_inputs():
    return [torch.randn(batch, M, K, dtype=torch.float16), torch.randn(batch, K, N, dtype=torch.float16)]


def get_init_inputs():
    return []
