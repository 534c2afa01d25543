"""Matrix product plus an addend, then LayerNorm (random affine): LN(A @ B + C)."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = nn.LayerNorm(n)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(n))
            self.ln.bias.copy_(0.5 * torch.randn(n))

    def forward(self, a, b, c):
        return self.ln(torch.matmul(a, b) + c)


m = 1024
k = 512
n = 1024


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)]


def get_init_inputs():
    return [n]
