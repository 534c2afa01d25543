"""Transformer MLP block: Linear(d, 4d) -> exact GELU -> Linear(4d, d)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, features)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


batch_size = 256
features = 512
hidden = 2048


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, hidden]
