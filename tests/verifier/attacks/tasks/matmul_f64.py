"""A matrix product in double precision: inputs and output are float64, and so must be the accuracy."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


m = 128
k = 512
n = 128


def get_inputs():
    return [torch.randn(m, k, dtype=torch.float64), torch.randn(k, n, dtype=torch.float64)]


def get_init_inputs():
    return []
