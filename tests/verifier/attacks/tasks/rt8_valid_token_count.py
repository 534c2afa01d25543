"""Tokens that count per sequence: labels equal to -100 (ignore_index, the padding of a language-model batch) do not."""
import torch
import torch.nn as nn

CATEGORY = "reduction"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, labels):
        return (labels != -100).sum(dim=1)


batch_size = 64
seq_len = 512
vocab = 1000


def get_inputs():
    return [torch.randint(0, vocab, (batch_size, seq_len))]


def get_init_inputs():
    return []
