"""Fully connected layer followed by a softmax over the output features at temperature 0.25: softmax((x @ W.T + b) / t)."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, in_features, out_features, temperature):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.temperature = temperature

    def forward(self, x):
        return torch.softmax(self.fc(x) / self.temperature, dim=1)


batch_size = 300
in_features = 256
out_features = 512
temperature = 0.25


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, temperature]
