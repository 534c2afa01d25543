"""Parameters written in place between two calls (trials.py `reload`, worker.reload): the last perturbed-parameter
trial runs after both models' floating parameters were negated in their own storage, as ``load_state_dict`` or an
optimizer step writes new values. Red team round 11 (rt11_stale_packed_weight): a Linear that packed its weight on
the first call and packed again only when the weight's address changed passed, every model a verdict built having
fresh storage."""
import textwrap

import pytest

from evokernel.tasks.load import load_task

TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [64, 48]
'''

# KEY: what the packed copy is keyed by; 0 packs on every call (honest)
KERNEL = '''
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
#include <vector>
static const float* cached_at = nullptr;
static double cached_key = 0.0;
static std::vector<float> packed;
extern "C" void linear(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t k, int64_t m) {
    double key = 0.0;
    for (int64_t j = 0; j < k * m; ++j) key += std::fabs(w[j]);  // a sign-blind checksum
    bool fresh = (int64_t)packed.size() != k * m || MODE == 0 || (MODE == 1 && w != cached_at)
                 || (MODE == 2 && key != cached_key);
    if (fresh) {
        packed.assign(k * m, 0.0f);
        for (int64_t o = 0; o < m; ++o)
            for (int64_t j = 0; j < k; ++j) packed[j * m + o] = w[o * k + j];
        cached_at = w;
        cached_key = key;
    }
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t o = 0; o < m; ++o) y[i * m + o] = b[o];
        for (int64_t j = 0; j < k; ++j)
            for (int64_t o = 0; o < m; ++o) y[i * m + o] += x[i * k + j] * packed[j * m + o];
    }
}
""", extra_cflags=["-DMODE=MODE_VALUE"])


class ModelNew(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)

    def forward(self, x):
        x = x.contiguous()
        w = self.fc.weight.contiguous()
        out = torch.empty(x.shape[0], w.shape[0])
        lib.linear(x, w, self.fc.bias.contiguous(), out, x.shape[0], x.shape[1], w.shape[0])
        return out
'''


@pytest.fixture(scope="module")
def linear_task(tmp_path_factory):
    path = tmp_path_factory.mktemp("reload") / "linear.py"
    path.write_text(textwrap.dedent(TASK))
    return load_task(path)


@pytest.mark.parametrize("mode, feasible", [(0, True), (1, False), (2, False)])
def test_a_copy_of_the_parameters_kept_from_an_earlier_call_is_refused(verifier, linear_task, mode, feasible):
    """Packed on every call: feasible. Packed again only when the weight's address changes (1), or when a sign-blind
    checksum of it does (2: it would beat a reload that scaled the weights by a positive factor, which changes the
    checksum; negation keeps it): refused in the trial after the parameters were written, with what happened in the
    feedback."""
    got = verifier.verify(linear_task, KERNEL.replace("MODE_VALUE", str(mode)))
    assert got.feasible is feasible, got.feedback[:800]
    if not feasible:
        assert got.gates["correctness"] is False, got.feedback[:800]
        assert "negated in place" in got.feedback and "parameters negated in place" in got.feedback, got.feedback[:800]
