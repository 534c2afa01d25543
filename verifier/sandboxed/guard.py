"""Runs INSIDE the sandbox. Confinement a worker applies to itself before candidate code runs, and
the recorder of torch operators used by the dynamic half of the anti-hack gate.

Nothing here is trusted by the parent: a candidate running in this process could in principle
tamper with it, which is why the parent never takes the worker's word for success (it checks
outputs itself) and why the static rules forbid the introspection that tampering needs.
"""
from __future__ import annotations

import errno
import resource
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# --- resource limits ----------------------------------------------------------------------------


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def apply_limits(memory_mb: int, cpu_s: int, fsize_mb: int = 64, nofile: int = 256) -> None:
    """Address space = what the worker already maps + ``memory_mb``; CPU seconds; file size; fds."""
    def cap(which: int, soft: int, hard: int | None = None) -> None:
        hard = soft if hard is None else hard
        cur_soft, cur_hard = resource.getrlimit(which)
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(which, (soft, hard))

    cap(resource.RLIMIT_AS, _vm_size() + memory_mb * 1024 * 1024)
    cap(resource.RLIMIT_CPU, cpu_s, cpu_s + 5)  # SIGXCPU at the soft limit, SIGKILL at the hard one
    cap(resource.RLIMIT_FSIZE, fsize_mb * 1024 * 1024)
    cap(resource.RLIMIT_NOFILE, nofile)
    cap(resource.RLIMIT_CORE, 0)


# --- seccomp ------------------------------------------------------------------------------------

_DENY = [
    # networking
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto", "sendmsg", "recvmsg",
    # other processes' memory and debugging
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
    # new processes (threads stay allowed; see clone below)
    "fork", "vfork", "execve", "execveat",
    # namespaces, mounts, kernel facilities
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "personality", "init_module", "finit_module", "delete_module",
    "kexec_load", "reboot", "swapon", "swapoff", "acct", "quotactl",
    # signalling other processes (a candidate may still raise signals on itself through tgkill)
    "kill",
]
CLONE_THREAD = 0x00010000


def install_seccomp() -> str:
    """Deny networking, ptrace, new processes and kernel facilities. Returns a short description."""
    try:
        import pyseccomp as sc
    except ImportError:  # the verifier records that seccomp was not available
        return "seccomp unavailable (pyseccomp not installed)"
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in _DENY:
        try:
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError, OSError):
            pass  # syscall unknown on this architecture
    # clone() without CLONE_THREAD makes a process; with it, a thread (OpenMP needs threads)
    flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    # clone3 passes flags in memory seccomp cannot read: ENOSYS makes glibc fall back to clone()
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    flt.load()
    return "seccomp"


# --- operator recorder ------------------------------------------------------------------------

# ATen operators that allocate, reshape or move memory without computing from the data.
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "new_zeros", "new_ones",
    "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_full", "zero_", "fill_",
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t", "unsqueeze",
    "squeeze", "flatten", "unflatten", "select", "slice", "narrow", "split", "split_with_sizes", "chunk",
    "unbind", "detach", "alias", "lift_fresh", "lift_fresh_copy", "clone", "contiguous", "copy_",
    "view_as", "expand_as", "movedim", "swapaxes", "swapdims", "resize_", "set_", "_reshape_alias",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size", "stride", "dim",
    "numel", "is_same_size", "_has_compatible_shallow_copy_type", "empty_permuted",
})


class OpRecorder(TorchDispatchMode):
    """Records every ATen operator dispatched while active (also those called from C++ extensions)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, int] = {}
        self.violations: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.overloadpacket.__name__
        self.calls[name] = self.calls.get(name, 0) + 1
        bad = name not in ALLOWED_OPS
        if name == "copy_" and len(args) >= 2 and isinstance(args[1], torch.Tensor):
            bad = args[0].dtype != args[1].dtype  # a copy that converts dtype is compute
        if bad:
            self.violations[name] = self.violations.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


class ShapeRecorder(TorchDispatchMode):
    """Records each ATen operator with the shapes and dtypes of its tensor inputs and outputs (used on
    the trusted reference to model its eager latency on an NPU: one kernel per operator)."""

    MAX_RECORDS = 10_000

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []

    @staticmethod
    def _describe(value: Any) -> list[dict[str, Any]]:
        flat = value if isinstance(value, (list, tuple)) else [value]
        out = []
        for v in flat:
            if isinstance(v, torch.Tensor):
                out.append({"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")})
            elif isinstance(v, (list, tuple)):
                out += ShapeRecorder._describe(v)
        return out

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if len(self.records) < self.MAX_RECORDS:
            ins = self._describe(list(args) + list((kwargs or {}).values()))
            self.records.append({"op": str(func), "inputs": ins, "outputs": self._describe(out)})
        return out
