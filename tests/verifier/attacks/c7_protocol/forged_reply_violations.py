"""Class 7 - the protocol trusts the worker's bytes: a forged reply to the first checked call reports
its recorded torch operators as a list instead of a name -> count object. The parent, building the
"PyTorch compute ran" finding, calls .items() on it: AttributeError escapes Verifier.verify.
Defences: a schema check of every reply (any mismatch a `runtime` verdict); the binary judge may
stop it earlier."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int control_fd() {            // the worker's reply pipe: the only write-only FIFO it keeps
    for (int fd = 3; fd < 256; ++fd) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY) return fd;
    }
    return -1;
}

static void send_raw(const char* body, uint32_t len) {   // one length-prefixed message, as the worker sends
    const int fd = control_fd();
    const unsigned char head[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
                                   (unsigned char)(len >> 8), (unsigned char)len};
    if (fd < 0 || write(fd, head, 4) != 4) return;
    for (uint32_t done = 0; done < len;) {
        const ssize_t n = write(fd, body + done, len - done);
        if (n <= 0) return;
        done += (uint32_t)n;
    }
}

static int sent = 0;

extern "C" void relu(const float* x, float* y, int64_t n) {
    if (!sent) {
        sent = 1;
        static const char msg[] = "{\"ok\": true, \"native_calls\": 1, \"violations\": [\"relu\"], \"outputs\": []}";
        send_raw(msg, sizeof msg - 1);
    }
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
