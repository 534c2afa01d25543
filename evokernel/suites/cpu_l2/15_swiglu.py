"""SwiGLU feed-forward: down(silu(gate(x)) * up(x)) with bias-free linear layers."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.gate = nn.Linear(features, hidden, bias=False)
        self.up = nn.Linear(features, hidden, bias=False)
        self.down = nn.Linear(hidden, features, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


batch_size = 256
features = 512
hidden = 1024


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, hidden]
