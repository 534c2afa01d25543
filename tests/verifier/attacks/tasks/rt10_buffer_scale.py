"""Per-feature scale held in a buffer (red-team rt10 task): y = relu(x) * scale, scale a (dim,) float buffer loaded
from a checkpoint in real use (a layer scale, a dequantisation scale), ones at construction. 16 x 4096 float32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))

    def forward(self, x):
        return torch.relu(x) * self.scale


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
