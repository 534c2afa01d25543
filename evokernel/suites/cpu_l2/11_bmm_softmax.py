"""Attention scores: softmax(Q @ K^T / sqrt(d)) over the key dimension, batched."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        scores = torch.bmm(q, k.transpose(1, 2)) / (q.shape[-1] ** 0.5)
        return torch.softmax(scores, dim=-1)


batch_size = 8
seq_len = 512
head_dim = 64


def get_inputs():
    return [torch.randn(batch_size, seq_len, head_dim), torch.randn(batch_size, seq_len, head_dim)]


def get_init_inputs():
    return []
