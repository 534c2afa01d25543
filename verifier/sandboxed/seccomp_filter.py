"""Runs INSIDE the sandbox: the confinement a process applies to itself before untrusted code runs --
resource limits and seccomp filters.

* ``run`` (candidate workers): no networking, no other processes' memory or debugging, no new processes
  (threads stay allowed), no namespaces, mounts or kernel facilities, no signals to others, and no thread
  placement or priority changes: the worker pins itself to the timed CPUs before the filter is installed,
  so a candidate cannot take a second core (sched_setaffinity) or a higher priority.
  With ``control_fd`` (the worker's control socket) the filter also pins that descriptor: ``sendmsg`` is
  the only call that may write to it (the worker's request loop sends with it, and no native symbol the
  binary judge admits reaches it), every other write-family call on it fails with EPERM (write, writev,
  pwrite*, send/sendto, sendmmsg, splice, tee, vmsplice, sendfile, copy_file_range), it cannot be copied
  to another number (dup, dup2, dup3, fcntl F_DUPFD*) nor replaced (dup2/dup3 onto it), and the
  asynchronous I/O interfaces that submit writes out of seccomp's sight (io_uring, Linux AIO) are denied
  outright. So a candidate that points the C stdio layer at the socket (``stderr->_fileno = fd``) or
  writes to it any other way gets EPERM: no frame reaches the parent that the worker did not send. A socket
  cannot be reopened through /proc/self/fd, and ``socket``/``socketpair``/``connect`` are denied, so there is
  no second way in. Descriptor numbers are compared on their low 32 bits, as the kernel reads them.
* ``build`` (compilers, the tools of a build): the same minus the process-creation denials -- compilers
  fork and exec their passes -- so nothing a candidate's source can influence at build time runs without
  a filter (under bubblewrap the launcher loads its compiled program, `filter_program`, into the build command;
  without bubblewrap `seccomp_exec` installs it and execs the command; filters survive exec).
"""
from __future__ import annotations

import errno
import resource

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

_DENY_ALWAYS = [
    # networking
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto", "sendmsg", "recvmsg",
    # other processes' memory and debugging
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
    # namespaces, mounts, kernel facilities
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "personality", "init_module", "finit_module", "delete_module",
    "kexec_load", "reboot", "swapon", "swapoff", "acct", "quotactl",
    # signalling other processes (a candidate may still raise signals on itself through tgkill)
    "kill",
]
# thread placement and priority belong to the verifier (both sides are timed alike)
_DENY_SCHEDULING = ["sched_setaffinity", "sched_setscheduler", "sched_setattr", "sched_setparam", "setpriority"]
# new processes (threads stay allowed; see clone below)
_DENY_PROCESSES = ["fork", "vfork", "execve", "execveat"]
CLONE_THREAD = 0x00010000

# the control socket (control_fd): calls that write to the descriptor in argument i
CONTROL_WRITES = {"write": 0, "writev": 0, "pwrite64": 0, "pwritev": 0, "pwritev2": 0, "sendto": 0, "sendmmsg": 0,
                  "vmsplice": 0, "sendfile": 0, "splice": 2, "tee": 1, "copy_file_range": 2}
# calls that copy a descriptor (argument 0) to a new number, or put another file at a number (argument 1)
CONTROL_COPIES = {"dup": (0,), "dup2": (0, 1), "dup3": (0, 1)}
F_DUPFD, F_DUPFD_CLOEXEC = 0, 1030
# submit I/O in ways a per-call filter cannot see the descriptor of: denied outright in candidate workers
ASYNC_IO = ["io_uring_setup", "io_uring_enter", "io_uring_register", "io_setup", "io_submit"]
LOW32 = 0xFFFFFFFF  # the kernel reads a descriptor argument as a 32-bit int


def _filter(sc: object, mode: str, control_fd: int | None = None) -> object:
    """The ``run`` or ``build`` filter, not yet loaded (see the module docstring)."""
    if mode not in ("run", "build"):
        raise ValueError(f"unknown seccomp mode {mode!r}")
    if control_fd is not None and mode != "run":
        raise ValueError("only the run filter pins a control socket")
    flt = sc.SyscallFilter(defaction=sc.ALLOW)  # type: ignore[attr-defined]
    deny = _DENY_ALWAYS + (_DENY_SCHEDULING + _DENY_PROCESSES if mode == "run" else [])
    if control_fd is not None:
        deny = [n for n in deny if n != "sendmsg"] + ASYNC_IO
    for name in deny:
        _add(flt, sc, name)
    if control_fd is not None:
        _pin_control_socket(flt, sc, control_fd)
    if mode == "run":
        # clone() without CLONE_THREAD makes a process; with it, a thread (OpenMP needs threads)
        flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))  # type: ignore
        # clone3 passes flags in memory seccomp cannot read: ENOSYS makes glibc fall back to clone()
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # type: ignore[attr-defined]
    return flt


def install_seccomp(mode: str = "run", control_fd: int | None = None) -> str:
    """Install the ``run`` or ``build`` filter (see the module docstring); ``control_fd`` (``run`` only): the
    worker's control socket, which then only ``sendmsg`` may write to. Returns a short description."""
    try:
        import pyseccomp as sc
    except ImportError:  # the verifier records that seccomp was not available
        return "seccomp unavailable (pyseccomp not installed)"
    _filter(sc, mode, control_fd).load()  # type: ignore[attr-defined]
    return f"seccomp ({mode})"


def filter_program(mode: str = "build") -> bytes | None:
    """The compiled (BPF) program of a filter, for a launcher that loads it into the command it starts
    (bubblewrap's ``--seccomp FD``): a build sandbox then needs no Python of its own to filter itself.
    None without pyseccomp (as `install_seccomp`, the build then runs unfiltered)."""
    try:
        import pyseccomp as sc
    except ImportError:
        return None
    import tempfile

    with tempfile.TemporaryFile() as f:
        _filter(sc, mode).export_bpf(f)  # type: ignore[attr-defined]
        f.seek(0)
        return f.read()


def _add(flt: object, sc: object, name: str, *args: object, err: int = errno.EPERM) -> None:
    try:
        flt.add_rule(sc.ERRNO(err), name, *args)  # type: ignore[attr-defined]
    except (RuntimeError, ValueError, OSError):
        pass  # syscall unknown on this architecture


def _pin_control_socket(flt: object, sc: object, fd: int) -> None:
    """sendmsg only on the control socket (the exact 64-bit value: a high bit set is another number to us, so
    it is refused); every other write to it, and every copy of it, refused (low 32 bits compared)."""
    on = lambda i: sc.Arg(i, sc.MASKED_EQ, LOW32, fd)  # noqa: E731 - argument i names the control socket
    _add(flt, sc, "sendmsg", sc.Arg(0, sc.NE, fd))
    for name, i in CONTROL_WRITES.items():
        _add(flt, sc, name, on(i))
    for name, args in CONTROL_COPIES.items():
        for i in args:
            _add(flt, sc, name, on(i))
    for cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
        _add(flt, sc, "fcntl", on(0), sc.Arg(1, sc.MASKED_EQ, LOW32, cmd))
