"""Containment: a crashing, hanging, greedy, lying or escaping candidate yields a classified failed
verdict, never a crash of the verifier and never a pass. Several of these switch the static rules
off to show that the deeper layers (seccomp, sandbox, parent-side checks) hold on their own."""
import os
import shutil
import time

import pytest

from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

NATIVE = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <vector>
%s
extern "C" void kernel(const float* x, float* y, int64_t n) {
    %s
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        %s
        y = torch.empty(x.shape, dtype=x.dtype)  # contiguous (empty_like keeps a strided trial input's strides)
        lib.kernel(x.contiguous(), y, x.numel())
        return y
'''


def cand(native="", python="pass", header="", posix=False):
    """``posix``: the kernel may call POSIX functions (<unistd.h>: a header the static rules do not allow, so only
    the tests that switch them off, or expect the hack gate, keep it)."""
    return header + NATIVE % ("#include <unistd.h>" if posix else "", native, python)


def cand_posix(native="", python="pass", header=""):
    return cand(native, python, header, posix=True)


@pytest.fixture(scope="module", params=["bwrap", "rlimits"])
def verifier(request, cache_dir):
    """This module runs in both sandbox modes: bubblewrap, and the rlimits + seccomp fallback."""
    if request.param == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    v = Verifier("cpu", VerifyConfig(cache_dir=cache_dir, timing=False, run_timeout_s=5.0, sandbox=request.param))
    v.start()
    yield v
    v.close()


def bwrap_only(verifier):
    if verifier.sandbox != "bwrap":
        pytest.skip("the rlimits fallback does not confine the filesystem (documented in docs/verifier.md)")


@pytest.fixture
def relu(suite_task):
    return suite_task("cpu_l1/01_relu.py", batch_size=4, dim=1024)


@pytest.fixture
def no_static(verifier, monkeypatch):
    monkeypatch.setattr(verifier.config, "static_rules", False)
    return verifier


def test_baseline_candidate_is_feasible(verifier, relu):
    v = verifier.verify(relu, cand())
    assert v.feasible, v.feedback
    assert v.gates == {"hack": True, "compile": True, "correctness": True}
    assert v.details["sandbox"] in {"bwrap", "rlimits"}


def test_segfault(verifier, relu):
    v = verifier.verify(relu, cand("volatile float* p = nullptr; *p = 1.0f;"))
    assert v.failed_gate == "runtime" and "SIGSEGV" in v.feedback


def test_native_hang(verifier, relu):
    t0 = time.monotonic()
    v = verifier.verify(relu, cand("volatile int64_t k = 0; while (true) { k++; }"))
    assert v.failed_gate == "timeout", v.feedback
    assert time.monotonic() - t0 < 60


def test_python_hang(no_static, relu):
    # the glue allow-list admits `while` on sizes; the deadline stops the loop
    v = no_static.verify(relu, cand_posix(python="while True:\n            pass"))
    assert v.failed_gate == "timeout"


def test_hang_at_import(no_static, relu, monkeypatch):
    # a module-level loop is refused by the glue allow-list; with the static rules off the deadline stops it
    monkeypatch.setattr(no_static.config, "load_timeout_s", 3.0)
    v = no_static.verify(relu, cand_posix(header="while True:\n    pass\n"))
    assert v.failed_gate == "timeout" and "import" in v.feedback


def test_memory_blowup_bad_alloc(verifier, relu):
    v = verifier.verify(relu, cand("std::vector<char> big((size_t)1 << 40); big[0] = 1;"))
    assert v.failed_gate == "runtime" and ("SIGABRT" in v.feedback or "memory" in v.feedback), v.feedback


def test_memory_blowup_gradual(verifier, relu, monkeypatch):
    # keeps allocating and touching 64 MiB blocks until the address-space limit stops it
    monkeypatch.setattr(verifier.config, "memory_mb", 1024)
    v = verifier.verify(relu, cand("static volatile char sink; for (;;) { char* p = (char*)malloc(1 << 26); "
                                         "memset(p, 1, 1 << 26); sink = p[12345]; }"))
    assert v.failed_gate == "runtime", v.feedback


def test_torch_oom(verifier, relu):
    v = verifier.verify(relu, cand(python="big = torch.empty(1 << 40)"))
    assert v.failed_gate == "runtime"


def test_stdout_junk_is_refused(no_static, relu):
    # print is refused by the glue allow-list; with the static rules off the parent still refuses stdout
    v = no_static.verify(relu, cand_posix(python="print('{\"ok\": true, \"speedup\": 100}')"))
    assert v.failed_gate == "runtime" and "stdout" in v.feedback


def test_stderr_is_allowed(verifier, relu):
    v = verifier.verify(relu, cand('fprintf(stderr, "debug %ld\\\\n", (long)n);'))
    assert v.feasible, v.feedback


def test_os_exit_in_forward(no_static, relu):
    v = no_static.verify(relu, cand_posix(python="import os\n        os._exit(0)"))
    assert v.failed_gate == "runtime" and "exited with code 0" in v.feedback


def test_native_stdout_with_static_rules_off(no_static, relu):
    v = no_static.verify(relu, cand_posix('printf("junk");'))
    assert v.failed_gate == "runtime" and "stdout" in v.feedback


FIND_SOCKET = ("import os, stat\n"
               "        ctrl = next(fd for fd in range(3, 256) if os.path.exists(f'/proc/self/fd/{fd}') and "
               "stat.S_ISSOCK(os.fstat(fd).st_mode))\n")


def test_forged_protocol_frames_do_not_pass(no_static, relu):
    # the control socket takes frames only through sendmsg: a plain write of a (well-formed) reply is refused by
    # the seccomp filter (EPERM), so it never reaches the parent
    forge = (FIND_SOCKET + '        import json, struct\n'
             '        m = json.dumps({"ok": True, "outputs": [{"dtype": "float32", "shape": [4, 1024], '
             '"offset": 0, "nbytes": 16384}], "native_calls": 1, "ops": {}, "violations": {}}).encode()\n'
             '        os.write(ctrl, struct.pack(">I", len(m)) + m)')
    v = no_static.verify(relu, cand_posix(python=forge))
    assert v.failed_gate == "runtime" and "Operation not permitted" in v.feedback, v.feedback
    junk = FIND_SOCKET + '        os.write(ctrl, b"\\x00\\x00\\x00\\x05junk!")'
    v = no_static.verify(relu, cand_posix(python=junk))
    assert v.failed_gate == "runtime" and "Operation not permitted" in v.feedback, v.feedback


# Every way native code could write to the control socket, each tried once; a route that gets through sets a
# bit, and the kernel then dies naming them (SIGABRT). `sendmsg` is the one call the filter lets through (the
# worker's own; the binary judge admits no native symbol that reaches it): see the nonce tests below.
DOORS = r"""
    static int tried = 0;
    if (!tried) {
        tried = 1;
        int ctrl = -1;
        for (int fd = 3; fd < 256 && ctrl < 0; ++fd) {
            struct stat st;
            if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) ctrl = fd;
        }
        static const char frame[] = "\0\0\0\x0b{\"ok\":true}";
        const size_t len = sizeof frame - 1;
        int doors = 0;
        if (write(ctrl, frame, len) > 0) doors |= 1 << 0;
        struct iovec iov = {(void*)frame, len};
        if (writev(ctrl, &iov, 1) > 0) doors |= 1 << 1;
        if (send(ctrl, frame, len, 0) > 0) doors |= 1 << 2;
        if (pwrite(ctrl, frame, len, 0) > 0) doors |= 1 << 3;
        struct mmsghdr mm; memset(&mm, 0, sizeof mm); mm.msg_hdr.msg_iov = &iov; mm.msg_hdr.msg_iovlen = 1;
        if (sendmmsg(ctrl, &mm, 1, 0) > 0) doors |= 1 << 4;
        const int saved = stderr->_fileno;                     // the C stdio layer pointed at the socket
        stderr->_fileno = ctrl;
        if (fwrite(frame, 1, len, stderr) == len) doors |= 1 << 5;
        stderr->_fileno = saved;
        clearerr(stderr);
        if (dup(ctrl) >= 0) doors |= 1 << 6;
        if (fcntl(ctrl, F_DUPFD_CLOEXEC, 50) >= 0) doors |= 1 << 7;
        if (dup2(ctrl, 60) >= 0) doors |= 1 << 8;
        if (dup3(ctrl, 61, 0) >= 0) doors |= 1 << 9;
        int p[2];
        if (pipe(p) == 0 && write(p[1], frame, len) == (ssize_t)len && splice(p[0], nullptr, ctrl, nullptr, len, 0) > 0)
            doors |= 1 << 10;
        const int m = memfd_create("frame", 0);
        if (m >= 0 && write(m, frame, len) == (ssize_t)len) {
            off_t at = 0;
            if (sendfile(ctrl, m, &at, len) > 0) doors |= 1 << 11;
            loff_t from = 0;
            if (copy_file_range(m, &from, ctrl, nullptr, len, 0) > 0) doors |= 1 << 12;
        }
        char params[120] = {0};
        if (syscall(SYS_io_uring_setup, 4, params) >= 0) doors |= 1 << 13;
        unsigned long aio = 0;
        if (syscall(SYS_io_setup, 1, &aio) == 0) doors |= 1 << 14;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", ctrl);
        const int again = open(path, O_WRONLY);
        if (again >= 0 && write(again, frame, len) > 0) doors |= 1 << 15;
        // the descriptor with a high bit set: the kernel reads 32 bits, the filter must too
        if (syscall(SYS_write, (long)ctrl | (1L << 32), frame, len) > 0) doors |= 1 << 16;
        if (m >= 0 && dup2(m, ctrl) >= 0) doors |= 1 << 17;   // another file put at the socket's number
        if (ctrl < 0 || doors) { fprintf(stderr, "DOORS %d (ctrl %d)\n", doors, ctrl); abort(); }
    }
"""
DOOR_HEADERS = ("#include <fcntl.h>\n#include <sys/stat.h>\n#include <sys/socket.h>\n#include <sys/uio.h>\n"
                "#include <sys/sendfile.h>\n#include <sys/mman.h>\n#include <sys/syscall.h>\n")


def test_native_code_cannot_write_to_the_control_socket(no_static, relu):
    src = cand_posix(DOORS).replace("#include <cstdint>", DOOR_HEADERS + "#include <cstdint>")
    v = no_static.verify(relu, src)
    assert v.feasible, v.feedback  # every route refused (the kernel then computes honestly)


def test_a_blind_frame_is_forged(no_static, relu):
    # sendmsg is allowed on the socket (it is how the worker sends), but a frame without the request's nonce is
    # not the worker's: hack. (A candidate's native code cannot reach sendmsg: the binary judge.)
    blind = r"""
    static int sent = 0;
    if (!sent) {
        sent = 1;
        for (int fd = 3; fd < 256; ++fd) {
            struct stat st;
            if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
            static const char m[] = "{\"ok\":true,\"outputs\":[],\"native_calls\":1}";
            unsigned char head[4] = {0, 0, 0, (unsigned char)(sizeof m - 1)};
            struct iovec iov[2] = {{head, 4}, {(void*)m, sizeof m - 1}};
            struct msghdr h; memset(&h, 0, sizeof h); h.msg_iov = iov; h.msg_iovlen = 2;
            sendmsg(fd, &h, 0);
        }
    }
"""
    src = cand_posix(blind).replace("#include <cstdint>", DOOR_HEADERS + "#include <cstdint>")
    v = no_static.verify(relu, src)
    assert v.failed_gate == "hack" and "nonce" in v.feedback, v.feedback


def test_a_second_frame_is_caught(no_static, relu):
    # candidate code that found the nonce (here: through the worker's own frames, static rules off) answers the
    # load request itself; the worker's real reply follows. Whichever the parent meets first -- the real reply
    # waiting on the channel when the next request goes out, or a frame with the previous request's nonce -- it
    # is a hack (the deterministic cases: tests/verifier/trusted/test_launcher.py)
    steal = ("\nimport sys\n"
             "f = sys._getframe(0)\n"
             "while 'msg' not in f.f_locals or 'self' not in f.f_locals:\n"
             "    f = f.f_back\n"
             "f.f_locals['self'].channel.send({'ok': True})\n")
    v = no_static.verify(relu, cand_posix() + steal)
    assert v.failed_gate == "hack" and ("waiting" in v.feedback or "nonce" in v.feedback), v.feedback


def test_stdout_cannot_be_erased(no_static, relu):
    # stdout is a memory file sealed against shrinking: junk printed and then truncated away still counts
    erase = r"""
    printf("junk"); fflush(stdout);
    if (ftruncate(1, 0) == 0) {}
    char path[32]; snprintf(path, sizeof path, "/proc/self/fd/%d", 1);
    if (truncate(path, 0) == 0) {}
    const int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd >= 0) close(fd);
"""
    src = cand_posix(erase).replace("#include <cstdint>", "#include <fcntl.h>\n#include <cstdint>")
    v = no_static.verify(relu, src)
    assert v.failed_gate == "runtime" and "stdout" in v.feedback, v.feedback


SHRINK = r"""
    static int started = 0;
    if (!started) {   // 10 ms after forward returned, while the parent checks the output for late writes
        started = 1;
        std::thread([] {
            usleep(10000);
            for (int fd = 0; fd < 256; ++fd) {
                struct stat st;
                if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) continue;  // the memory files
                char path[64];
                snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
                if (ftruncate(fd, 0) == 0) continue;
                if (truncate(path, 0) == 0) continue;
                const int again = open(path, O_RDWR | O_TRUNC);
                if (again >= 0) { close(again); continue; }
                if (fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, st.st_size) == 0) continue;
                fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_WRITE);  // would stop the parent growing or writing it
            }
        }).detach();
    }
"""
SHRINK_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_isolation import SHRINK, cand_posix
from evokernel.tasks.load import load_task
from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig
task = load_task(Path({task!r}), {{"batch_size": 4, "dim": 1024}})
src = cand_posix(SHRINK).replace("#include <cstdint>",
                           "#include <fcntl.h>\\n#include <sys/stat.h>\\n#include <thread>\\n#include <cstdint>")
with Verifier("cpu", VerifyConfig(cache_dir=Path({cache!r}), timing=False, static_rules=False,
                                  sandbox={mode!r})) as v:
    verdict = v.verify(task, src)
print("GATE", verdict.failed_gate, verdict.feedback[:300])
"""


def test_shrinking_a_memory_file_does_not_kill_the_parent(verifier, relu, cache_dir):
    """The shared region, stdout and stderr are sealed against shrinking before the worker gets them: a
    candidate thread that truncates them (every route) while the parent reads the region cannot make the
    parent's mapping point past the end of the file (without the seals: SIGBUS in the parent, or in the worker
    writing its next output). Run in a child process, so that a regression is a failed test, not a dead pytest."""
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    script = SHRINK_SCRIPT.format(tests=str(here), task=str(relu.path), cache=str(cache_dir), mode=verifier.sandbox)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "GATE None" in proc.stdout, proc.stdout[-2000:]


def test_no_network(no_static, relu):
    code = "import socket\n        socket.create_connection(('127.0.0.1', 9), timeout=1)"
    v = no_static.verify(relu, cand_posix(python=code))
    assert v.failed_gate == "runtime"
    assert "not permitted" in v.feedback or "unreachable" in v.feedback or "refused" in v.feedback


def test_no_new_processes(no_static, relu):
    v = no_static.verify(relu, cand_posix(python="import os\n        os.fork()"))
    assert v.failed_gate == "runtime" and "not permitted" in v.feedback
    v = no_static.verify(relu, cand_posix(python="import subprocess\n        subprocess.run(['true'])"))
    assert v.failed_gate == "runtime"


def test_native_fork_blocked(no_static, relu):
    # fork() from C++ fails with EPERM under the seccomp filter; this kernel reports that by crashing
    v = no_static.verify(relu, cand_posix("if (fork() < 0) { volatile float* p = nullptr; *p = 0; }"))
    assert v.failed_gate == "runtime" and "SIGSEGV" in v.feedback, v.feedback


def test_filesystem_is_read_only_and_private(no_static, relu, tmp_path):
    bwrap_only(no_static)
    target = tmp_path / "escape.txt"
    v = no_static.verify(relu, cand_posix(python=f"open({str(target)!r}, 'w').write('x')"))
    assert v.failed_gate == "runtime" and not target.exists()


@pytest.fixture(scope="module")
def secret_env_verifier(cache_dir):
    os.environ["OPENAI_API_KEY"] = "sk-test-secret"
    try:
        v = Verifier("cpu", VerifyConfig(cache_dir=cache_dir, timing=False, run_timeout_s=5.0, static_rules=False))
        v.start()
    finally:
        del os.environ["OPENAI_API_KEY"]
    yield v
    v.close()


def test_environment_and_home_are_hidden(secret_env_verifier, relu):
    from pathlib import Path

    project = Path(__file__).resolve().parents[2]
    secret = Path.home() / f".evokernel-test-secret-{os.getpid()}"
    secret.write_text("token")
    probe = ("import os\n"
             "        assert 'OPENAI_API_KEY' not in os.environ, 'key visible'\n"
             f"        assert not os.path.exists({str(project / 'pyproject.toml')!r}), 'project visible'\n"
             f"        assert not os.path.exists({str(secret)!r}), 'home visible'")
    try:
        v = secret_env_verifier.verify(relu, cand(python=probe))
    finally:
        secret.unlink()
    if secret_env_verifier.sandbox == "bwrap":
        assert v.feasible, v.feedback
    else:  # the rlimits fallback clears the environment but cannot hide files
        assert "key visible" not in v.feedback


def test_stray_processes_are_killed(cache_dir):
    """A daemon left behind by a worker (double fork + setsid) is swept when the worker ends."""
    from evokernel.verifier.trusted.launcher import Zygote

    z = Zygote(label="test").start()
    if not z.pid_namespace:
        z.close()
        pytest.skip("no pid namespace without bubblewrap")
    try:
        w = z.spawn("reference", 1024, 60)  # reference role: no seccomp, so it can fork
        # the worker returns only once the daemon exists in a session of its own
        daemon = ("import os, time\n"
                  "pid = os.fork()\n"
                  "if pid == 0:\n"
                  "    os.setsid()\n"
                  "    if os.fork() == 0:\n"
                  "        time.sleep(600)\n"
                  "    os._exit(0)\n"
                  "os.waitpid(pid, 0)\n"
                  "class Model: pass\n"
                  "def get_inputs(): return []\n"
                  "def get_init_inputs(): return []\n")
        assert w.call({"op": "load", "source": daemon, "threads": 1}, 30)["ok"]
        status = w.close()
        assert status["stray_killed"] >= 1
    finally:
        z.close()


def test_verifier_survives_and_stays_usable(verifier, relu):
    # after all of the above the same verifier still judges a good candidate correctly
    assert verifier.verify(relu, cand()).feasible


def test_build_requests_are_capped(no_static, relu):
    # load_cpp inside forward is refused by the glue allow-list; with the static rules off the cap holds
    src = cand_posix().replace("lib.kernel(x.contiguous(), y, x.numel())",
                         "for i in range(40):\n            load_cpp('extern \"C\" void k%d(float* x) {}' % i)\n"
                         "        lib.kernel(x.contiguous(), y, x.numel())")
    v = no_static.verify(relu, src)
    # the candidate's build budget (runtime/build_cache.py: 8 libraries) now refuses before the worker's build cap
    assert v.failed_gate == "runtime" and "too many native libraries" in v.feedback, v.feedback


def test_reference_sandbox_restart(verifier, relu):
    # if the reference sandbox dies between verdicts, the next verdict starts a new one
    verifier._ref_zygote.close()
    assert verifier.verify(relu, cand()).feasible


def test_nothing_survives_between_candidates(no_static, relu):
    # a file a candidate leaves in the sandbox's /tmp is gone for the next candidate
    bwrap_only(no_static)
    first = no_static.verify(relu, cand_posix(python="open('/tmp/evk-cache.bin', 'w').write('cached')"))
    assert first.feasible, first.feedback
    second = no_static.verify(relu, cand_posix(python="import os\n        assert not os.path.exists('/tmp/evk-cache.bin'), 'leak'"))
    assert second.feasible, second.feedback


def test_public_api_one_shot(relu, cache_dir):
    from evokernel.verifier import Verdict, verify

    v = verify(relu, cand(), cache_dir=cache_dir, timing=False)
    assert isinstance(v, Verdict) and v.feasible


def test_cpu_time_limit(verifier, relu, monkeypatch):
    # the CPU-seconds rlimit stops a spinning kernel even when the wall-clock deadline is generous
    monkeypatch.setattr(verifier.config, "cpu_s", 3)
    monkeypatch.setattr(verifier.config, "run_timeout_s", 60.0)
    v = verifier.verify(relu, cand("volatile int64_t k = 0; while (true) { k++; }"))
    assert v.failed_gate == "timeout" and "CPU-time limit" in v.feedback, v.feedback


def test_file_size_limit(no_static, relu):
    # stderr is a memory file capped by RLIMIT_FSIZE (64 MiB): flooding it ends the worker
    v = no_static.verify(relu, cand_posix(python="import sys\n        sys.stderr.write('x' * (80 << 20))\n        sys.stderr.flush()"))
    assert v.failed_gate == "runtime" and ("SIGXFSZ" in v.feedback or "File too large" in v.feedback), v.feedback


def test_outputs_must_be_plain_tensors(no_static, relu):
    src = cand_posix().replace("        return y\n", "        return y.as_subclass(Fake)\n") + \
        "\n\nclass Fake(torch.Tensor):\n    pass\n"
    v = no_static.verify(relu, src)
    assert v.failed_gate == "correctness" and "plain torch.Tensor" in v.feedback, v.feedback


def test_feedback_carries_no_host_path(no_static, relu):
    """Whatever a verdict quotes (here: an exception at import that names the build cache, a file under $HOME
    and the package folder) passes the final scrub: placeholders instead of the host's folders."""
    import json
    from pathlib import Path

    import evokernel

    cache = str(no_static.config.cache_dir)
    home = str(Path.home() / "projects" / "secret.txt")
    pkg = str(Path(evokernel.__file__).resolve().parent / "cpu.py")
    v = no_static.verify(relu, cand_posix(header=f"raise RuntimeError({cache + '/cpp/x.cpp ' + home + ' ' + pkg!r})\n"))
    assert v.failed_gate == "compile", v.feedback
    seen = v.feedback + json.dumps(v.details)
    assert cache not in seen and home not in seen and pkg not in seen, seen
    assert "<cache>/cpp/x.cpp" in v.feedback and "<evokernel>/evokernel/cpu.py" in v.feedback, v.feedback
    assert "~/projects/secret.txt" in v.feedback, v.feedback


def test_any_exception_while_judging_is_a_runtime_verdict(verifier, relu, monkeypatch):
    """A judge that slips on something (here: made to raise AttributeError, the exception of issue 28 that used
    to escape) gives a `runtime` verdict naming it; TaskError and SandboxError still reach the caller; the next
    candidate is judged normally."""
    from evokernel.tasks.task import TaskError
    from evokernel.verifier.trusted import trials
    from evokernel.verifier.trusted.launcher import SandboxError

    for exc in (AttributeError("'int' object has no attribute 'get'"), KeyError("blocks"), MemoryError(),
                RecursionError("deep")):
        def boom(*a, exc=exc, **kw):
            raise exc

        monkeypatch.setattr(trials, "compare_outputs", boom)
        v = verifier.verify(relu, cand())
        assert v.failed_gate == "runtime" and type(exc).__name__ in v.feedback, v.feedback
        assert type(exc).__name__ in v.details["error"]
    for exc in (TaskError("broken task"), SandboxError("no sandbox")):
        def boom(*a, exc=exc, **kw):
            raise exc

        monkeypatch.setattr(trials, "compare_outputs", boom)
        with pytest.raises(type(exc)):
            verifier.verify(relu, cand())
    monkeypatch.undo()
    assert verifier.verify(relu, cand()).feasible


def test_a_source_the_static_rules_cannot_parse_is_a_verdict(verifier, relu):
    # 100,000 chained additions: RecursionError while the parser builds the tree (it escaped verify before)
    src = cand().replace("        return y\n", "        return y" + " + y" * 100_000 + "\n")
    v = verifier.verify(relu, src)
    assert v.failed_gate == "runtime" and "RecursionError" in v.feedback, v.feedback
    assert verifier.verify(relu, cand()).feasible
