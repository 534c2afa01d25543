"""Matrix multiplication with a long reduction dimension in float16: a @ b, K = 2048 and a small output."""
import torch
import torch.nn as nn

CATEGORY = "matmul"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 144
K = 2048
N = 160


def get_inputs():
    # scaled so the float16 output (sums of 2048 products) stays well inside half's range and precision
    return [torch.randn(M, K, dtype=torch.float16) / 8, torch.randn(K, N, dtype=torch.float16) / 8]


def get_init_inputs():
    return []
