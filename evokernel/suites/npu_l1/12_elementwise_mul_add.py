"""Elementwise multiply-add of three same-shaped tensors: a * b + c."""
import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return a * b + c


batch_size = 256
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
