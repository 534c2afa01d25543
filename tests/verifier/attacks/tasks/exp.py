"""Elementwise exponential. Inputs with large values (the heavy-tailed trial) overflow float32: the
reference is +Inf there and finite everywhere else."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.exp(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
