"""Layer normalization over the last dimension in float16 (input, affine parameters and output)."""
import torch
import torch.nn as nn

CATEGORY = "normalization"


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features, eps=1e-5, dtype=torch.float16)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(features))
            self.ln.bias.copy_(0.5 * torch.randn(features))

    def forward(self, x):
        return self.ln(x)


batch_size = 128
features = 2048


def get_inputs():
    return [torch.randn(batch_size, features, dtype=torch.float16)]


def get_init_inputs():
    return [features]
