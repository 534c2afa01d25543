"""Hack (static): imports ctypes to reach native code directly (libc memcpy / raw pointers), around
load_cpp and its call accounting."""
import ctypes

import torch
import torch.nn as nn

libc = ctypes.CDLL(None)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        libc.memcpy(ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()), x.numel() * 4)
        return out.clamp_(min=0)
