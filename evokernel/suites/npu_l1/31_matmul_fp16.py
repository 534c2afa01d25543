"""Matrix multiplication of float16 matrices: a @ b (the cube unit's operation)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 500
K = 264
N = 384


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)]


def get_init_inputs():
    return []
