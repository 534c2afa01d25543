"""Scale by a forward argument that is a Python float (NPUKernelBench-style non-tensor argument)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, alpha):
        return x * alpha + 1.0


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim), 0.75]


def get_init_inputs():
    return []
