"""Per-feature bias add followed by tanh-approximated GELU: gelu_tanh(x + bias)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(features))

    def forward(self, x):
        return F.gelu(x + self.bias, approximate="tanh")


batch_size = 128
features = 2048


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
