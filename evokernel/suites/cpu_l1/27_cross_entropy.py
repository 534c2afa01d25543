"""Cross-entropy loss of (N, C) logits against int64 class targets, mean over the batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "loss"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets)


batch_size = 6144
num_classes = 1000


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
