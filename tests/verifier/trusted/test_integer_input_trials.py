"""Integer inputs in the special trials (verifier/sandboxed/integer_inputs.py, hooked in the reference worker's
make_inputs): the reference's own model decides which boundaries and sentinels are planted, and honest kernels of
operators that refuse a sentinel stay feasible while a kernel wrong on an accepted sentinel is refused."""
import textwrap

import torch

from evokernel.tasks.load import load_task
from evokernel.verifier.trusted import regions

EMBEDDING = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, rows, dim):
        super().__init__()
        self.emb = nn.Embedding(rows, dim)

    def forward(self, idx):
        return self.emb(idx)


def get_inputs():
    return [torch.randint(0, 50, (512,))]


def get_init_inputs():
    return [50, 16]
'''

TAKE_ROWS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx):
        return x[idx]


def get_inputs():
    return [torch.randn(40, 8), torch.randint(0, 40, (256,))]


def get_init_inputs():
    return []
'''

EMBEDDING_KERNEL = '''
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void gather_rows(const float* t, const int64_t* idx, float* out, int64_t n, int64_t d) {
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < d; ++j) out[i * d + j] = t[idx[i] * d + j];
}
""")


class ModelNew(nn.Module):
    def __init__(self, rows, dim):
        super().__init__()
        self.emb = nn.Embedding(rows, dim)

    def forward(self, idx):
        idx = idx.contiguous()
        out = torch.empty(idx.shape[0], self.emb.weight.shape[1])
        lib.gather_rows(self.emb.weight, idx, out, idx.shape[0], self.emb.weight.shape[1])
        return out
'''

TAKE_KERNEL = '''
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void take_rows(const float* x, const int64_t* idx, float* out, int64_t n, int64_t rows, int64_t d) {
    for (int64_t i = 0; i < n; ++i) {
        int64_t k = idx[i];
        k = WRAP;
        for (int64_t j = 0; j < d; ++j) out[i * d + j] = x[k * d + j];
    }
}
""")


class ModelNew(nn.Module):
    def forward(self, x, idx):
        x, idx = x.contiguous(), idx.contiguous()
        out = torch.empty(idx.shape[0], x.shape[1])
        lib.take_rows(x, idx, out, idx.shape[0], x.shape[0], x.shape[1])
        return out
'''


def _task(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return load_task(path)


def _special_inputs(verifier, task, seed):
    ref = verifier._pool.get(task)
    ref.init(0)
    return [regions.tensor(ref.handle, m).clone() for m in ref.make_inputs(seed, "special")]


def test_the_reference_decides_what_is_planted(verifier, tmp_path):
    emb = _task(tmp_path, "embedding.py", EMBEDDING)
    take = _task(tmp_path, "take_rows.py", TAKE_ROWS)
    for seed in (1, 2):
        idx = _special_inputs(verifier, emb, seed)[0]
        assert int(idx.min()) == 0 and int(idx.max()) == 49  # the boundaries; no sentinel: embedding raises
        x, rows = _special_inputs(verifier, take, seed)
        assert bool((rows == -1).any()) and bool((rows == -40).any())  # wrap to valid rows: kept
        assert not bool((rows == -100).any())  # out of range for 40 rows: the reference raised, not planted
        assert x.dtype == torch.float32
    plain = verifier._pool.get(take)
    plain.init(0)
    drawn = [regions.tensor(plain.handle, m) for m in plain.make_inputs(1, "none")]
    assert int(drawn[1].min()) >= 0  # only the special trials plant


def test_honest_kernels_pass_and_a_kernel_wrong_on_a_planted_sentinel_is_refused(verifier, tmp_path):
    emb = _task(tmp_path, "embedding.py", EMBEDDING)
    v = verifier.verify(emb, EMBEDDING_KERNEL)
    assert v.feasible, v.feedback[:800]
    take = _task(tmp_path, "take_rows.py", TAKE_ROWS)
    v = verifier.verify(take, TAKE_KERNEL.replace("WRAP", "k < 0 ? k + rows : k"))
    assert v.feasible, v.feedback[:800]
    v = verifier.verify(take, TAKE_KERNEL.replace("WRAP", "k < 0 ? 0 : k"))  # negative indices read row 0
    assert not v.feasible and v.failed_gate == "correctness", v.feedback[:800]
    assert "special" in v.feedback and "-100" in v.feedback
