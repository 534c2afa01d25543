"""A FAKE torch_npu for tests (no NPU, no CANN): the API surface the device runner uses, on the CPU.

- torch_npu.npu.set_device(id), synchronize(), Event(enable_timing=True).record()/elapsed_time(other)
  (perf_counter based, milliseconds), current_device(); `torch.npu` is set to the same module, as the real
  torch_npu registers it at import.
- It does NOT make an "npu" device exist: tests ask the device runner for device "cpu".
- FAKE_TORCH_NPU_LOG=<file>: every call is appended there as one line (name and arguments), so a test can
  check what the runner called.
"""
import torch

from . import npu

__version__ = "0.0.fake"

torch.npu = npu
