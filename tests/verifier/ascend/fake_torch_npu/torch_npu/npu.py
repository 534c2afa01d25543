"""torch_npu.npu of the fake: device selection, synchronisation and timing events on the CPU."""
import os
import time

_current = 0


def _log(*parts):
    path = os.environ.get("FAKE_TORCH_NPU_LOG")
    if path:
        with open(path, "a") as f:
            f.write(" ".join(str(p) for p in parts) + "\n")


def set_device(device):
    global _current
    _current = int(str(device).split(":")[-1]) if not isinstance(device, int) else device
    _log("set_device", _current)


def current_device():
    return _current


def synchronize(device=None):
    _log("synchronize")


def is_available():
    return True


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()
        _log("event_record")

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        if not self.enable_timing or self._t is None or end._t is None:
            raise RuntimeError("fake torch_npu: both events must be recorded with enable_timing=True")
        return (end._t - self._t) * 1000.0
