"""Fully connected layer followed by ReLU: relu(x @ W.T + b) (the cube unit with a fused epilogue)."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x))


batch_size = 256
in_features = 520
out_features = 272


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
