"""The modelled-traffic floor of timing_mode "model" (`trials.WorkerJudge.check_modelled_traffic`): a forward reads
every input byte and writes every output byte, except inputs whose values the reference's outputs do not depend on
(`trials.value_free_inputs`: an im2col index table is a function of its input's shape only; such a kernel honestly
reads nothing of it, and was refused as a hack)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from evokernel.verifier.trusted.failures import Fail
from evokernel.verifier.trusted.trials import WorkerJudge, _digest, value_free_inputs

X1, X2 = torch.arange(420, dtype=torch.float32), -torch.arange(420, dtype=torch.float32)
STRIDE = torch.tensor([2], dtype=torch.int32)
OUT_A, OUT_B = torch.zeros(162, dtype=torch.int32), torch.ones(162, dtype=torch.int32)


def trial(x: torch.Tensor, out: torch.Tensor) -> tuple[list[str], str]:
    return [_digest([x]), _digest([STRIDE])], _digest([out])


def judge(digests: list[tuple[list[str], str]]) -> WorkerJudge:
    j = WorkerJudge.__new__(WorkerJudge)
    j.v = SimpleNamespace(backend=SimpleNamespace(audit=lambda *a: []), _builds=None)
    j.reports, j.digests = [], digests
    j.input_bytes = [X1.numel() * 4, 4]
    j.io_bytes = (sum(j.input_bytes), OUT_A.numel() * 4)
    return j


def test_value_free_inputs_are_those_that_changed_while_every_output_stayed():
    assert value_free_inputs([trial(X1, OUT_A), trial(X2, OUT_A)]) == [0]  # the stride never changed: counted
    assert value_free_inputs([trial(X1, OUT_A), trial(X2, OUT_B)]) == []   # the output changed with x
    assert value_free_inputs([trial(X1, OUT_A)]) == []                    # one trial shows nothing


def test_a_kernel_that_reads_only_what_the_output_depends_on_passes_the_floor():
    gm = OUT_A.numel() * 4 + 32  # writes the output, reads the stride (one 32-byte block)
    details: dict = {}
    judge([trial(X1, OUT_A), trial(X2, OUT_A)]).check_modelled_traffic({"kernels": [{"gm_bytes": gm}]}, details)
    assert details["modelled_traffic"]["value_free_inputs"] == [0]


def test_the_same_traffic_is_refused_when_the_output_depends_on_the_input():
    gm = OUT_A.numel() * 4 + 32
    with pytest.raises(Fail) as exc:
        judge([trial(X1, OUT_A), trial(X2, OUT_B)]).check_modelled_traffic({"kernels": [{"gm_bytes": gm}]}, {})
    assert exc.value.gate == "hack" and "global-memory traffic" in str(exc.value)


def test_an_output_written_short_is_refused_even_with_value_free_inputs():
    with pytest.raises(Fail):
        judge([trial(X1, OUT_A), trial(X2, OUT_A)]).check_modelled_traffic({"kernels": [{"gm_bytes": 100}]}, {})


def test_digests_take_every_tensor_form():
    """A 0-dim output (a loss), a bool and a transposed tensor: the digest reads their bytes (a 0-dim view as bytes
    raised and turned mse_loss's verdict into a runtime failure)."""
    assert _digest([torch.tensor(1.5)]) != _digest([torch.tensor(2.5)])
    assert _digest([torch.tensor(True)]) != _digest([torch.tensor(False)])
    x = torch.arange(6.0).reshape(2, 3)
    assert _digest([x.t()]) == _digest([x.t().contiguous()])
