"""Matrix multiplication of float32 matrices with the second one transposed: a @ b.T (B stored N x K)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b.T


M = 300
K = 200
N = 256


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
