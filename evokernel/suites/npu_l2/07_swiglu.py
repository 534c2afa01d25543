"""SwiGLU gating of two same-shaped inputs: silu(gate) * up."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate, up):
        return F.silu(gate) * up


batch_size = 128
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
