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
    _check_broken()


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


def device_count():
    return int(os.environ.get("FAKE_NPU_DEVICE_COUNT", "1"))


def get_device_name(device=None):
    return "Ascend910B2 (fake)"


def _check_broken():
    """FAKE_NPU_BROKEN=<dir>: while <dir>/npu<id> exists that device is unusable (a fault that outlived its
    process): selecting it fails as a real runtime would."""
    path = os.environ.get("FAKE_NPU_BROKEN")
    if path and os.path.exists(os.path.join(path, f"npu{_current}")):
        os.write(2, b"EZ9999: Inner Error! device 0 is unavailable, retCode=0x31 [vector core exception]\n")
        raise RuntimeError("ACL error 507035: the device is not usable")
