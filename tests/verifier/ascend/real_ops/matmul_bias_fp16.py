"""C = A @ B + bias with float16 A (M x K) and B (K x N), a float32 bias of N and a float32 C: the MatmulCustom
operator of Ascend's samples (10_matmul_frameworklaunch) at the sizes its tiling and test data are written for
(M = 1024, N = 640, K = 256). Values are small integers as the sample's gen_data.py draws them, so float16
holds them exactly and the float32 sums are exact."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, bias):
        return torch.matmul(a.float(), b.float()) + bias


M = 1024
N = 640
K = 256


def get_inputs():
    return [torch.randint(1, 10, (M, K)).half(), torch.randint(1, 10, (K, N)).half(),
            torch.randint(1, 10, (N,)).float()]


def get_init_inputs():
    return []
