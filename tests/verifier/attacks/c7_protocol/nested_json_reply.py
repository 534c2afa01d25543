"""Class 7 - the protocol trusts the worker's bytes: native code finds the worker's reply pipe (the
only write-only FIFO among its descriptors) and, during the first checked call, writes one well-
framed message of 100,000 nested JSON arrays. The parent's json.loads raises RecursionError, which
nothing catches: the verifier dies with a traceback and no verdict. Defences: nesting and size
limits in the message codec, every parse error a `runtime` verdict; the binary judge (no descriptor
APIs) may stop it earlier."""
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
        static char msg[200000];
        memset(msg, '[', 100000);
        memset(msg + 100000, ']', 100000);
        send_raw(msg, sizeof msg);
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
