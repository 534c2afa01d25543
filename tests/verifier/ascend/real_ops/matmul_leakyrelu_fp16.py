"""C = leaky_relu(A @ B + bias, 0.001) with float16 A (M x K) and B (K x N), a float32 bias and a float32 C: the
MatmulLeakyreluCustom operator of Ascend's samples (12_matmulleakyrelu_frameworklaunch; alpha = 0.001 is set in
its TilingFunc) at the sizes its tiling and test data are written for (M = 1024, N = 640, K = 256). Inputs are
drawn around zero (the sample's own data are all positive, where LeakyRelu is the identity) so the negative
slope is exercised; they are multiples of 1/8 so float16 holds them exactly."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, bias):
        return F.leaky_relu(torch.matmul(a.float(), b.float()) + bias, 0.001)


M = 1024
N = 640
K = 256


def get_inputs():
    return [(torch.randint(-8, 9, (M, K)) / 8).half(), (torch.randint(-8, 9, (K, N)) / 8).half(),
            torch.randint(-4, 5, (N,)).float()]


def get_init_inputs():
    return []
