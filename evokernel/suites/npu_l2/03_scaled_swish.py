"""Swish with a slope: x * sigmoid(beta * x) (beta 1.702, the 'quick GELU')."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, x):
        return x * torch.sigmoid(self.beta * x)


batch_size = 127
dim = 2003
beta = 1.702


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta]
