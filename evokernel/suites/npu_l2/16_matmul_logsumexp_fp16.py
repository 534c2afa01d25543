"""Matrix multiplication in float16 followed by a row-wise logsumexp: logsumexp(a @ b, dim=1, keepdim=True)."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.logsumexp(torch.matmul(a, b), dim=1, keepdim=True)


M = 600
K = 128
N = 464


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16) / 4, torch.randn(K, N, dtype=torch.float16) / 4]


def get_init_inputs():
    return []
