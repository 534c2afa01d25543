"""Sigmoid on a float16 tensor (rt2 attack task)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim).half()]


def get_init_inputs():
    return []
