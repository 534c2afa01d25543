"""Row means of a LayerNorm without affine parameters (exactly 0 for every input; float32 PyTorch scatters
rounding around it)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],)).mean(dim=-1)


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
