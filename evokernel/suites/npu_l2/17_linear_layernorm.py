"""Fully connected layer followed by LayerNorm over the output features with a random affine transform."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)
        with torch.no_grad():
            self.norm.weight.copy_(torch.rand(out_features) + 0.5)
            self.norm.bias.copy_(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return self.norm(self.fc(x))


batch_size = 200
in_features = 320
out_features = 768


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
