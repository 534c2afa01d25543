"""Fake torch_npu.utils.cpp_extension (tests only): `NpuExtension` as the generated setup.py of
binding_build.py uses it.

The real NpuExtension is a torch CppExtension with torch_npu's include and library paths; building a
candidate's op.cpp needs torch_npu's headers and an EXEC_NPU_CMD helper, neither of which exists here.
This fake "compiles" csrc/op.cpp the way the other fakes compile (bracket balance, the helper include and
the torch/ATen/c10/pybind11 includes must resolve, PYBIND11_MODULE present; a failure is printed as a clang-style `csrc/op.cpp:L:C: error:` line and
the build exits 1) and builds instead a small real C extension named like the module whose init hands the
module to `torch_npu._fake_device.bind`, which implements the functions op.cpp exports by running the
installed operator on the fake device. So `python setup.py build_ext --inplace` really runs (setuptools,
the C compiler, an importable custom_ops_lib*.so next to setup.py), only the C++ of op.cpp is not compiled.
"""
import os
import re
import sys
from pathlib import Path

from setuptools import Extension

_FAKE_CANN_LIB = Path(__file__).resolve().parents[3] / "fake_cann" / "lib"

SHIM = r'''
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%(name)s", "fake NPU binding (tests only)", -1, NULL};

PyMODINIT_FUNC PyInit_%(name)s(void) {
    PyObject *m = PyModule_Create(&def);
    if (m == NULL) return NULL;
    PyObject *dev = PyImport_ImportModule("torch_npu._fake_device");
    if (dev == NULL) { Py_DECREF(m); return NULL; }
    PyObject *r = PyObject_CallMethod(dev, "bind", "Os", m, "%(op_cpp)s");
    Py_DECREF(dev);
    if (r == NULL) { Py_DECREF(m); return NULL; }
    Py_DECREF(r);
    return m;
}
'''


def _error(path, line, col, msg):
    print(f"{path}:{line}:{col}: error: {msg}", file=sys.stderr)
    print("error: command '/usr/bin/g++' failed with exit code 1", file=sys.stderr)
    sys.exit(1)


def NpuExtension(name, sources, *args, **kwargs):
    src = Path(sources[0])
    text = src.read_text()
    sys.path.insert(0, str(_FAKE_CANN_LIB))
    import fakecann

    bad = fakecann.first_unbalanced(text)
    if bad:
        _error(sources[0], *bad)
    for m in re.finditer(r'#include\s+"([^"]+)"', text):
        if not (src.parent / m.group(1)).is_file():
            line = text.count("\n", 0, m.start()) + 1
            _error(sources[0], line, 10, f"'{m.group(1)}' file not found")
    from torch.utils.cpp_extension import include_paths

    for m in re.finditer(r"#include\s+<((?:torch|ATen|c10|pybind11)/[^>]+)>", text):
        if not any((Path(d) / m.group(1)).is_file() for d in include_paths()):
            line = text.count("\n", 0, m.start()) + 1
            _error(sources[0], line, 10, f"'{m.group(1)}' file not found")
    if "PYBIND11_MODULE" not in text:
        print("fake NpuExtension: no PYBIND11_MODULE in op.cpp; the module would export nothing", file=sys.stderr)
    shim = src.parent / "_fake_npu_shim.c"
    shim.write_text(SHIM % {"name": name, "op_cpp": str(src.resolve())})
    os.environ.setdefault("CC", "gcc")
    return Extension(name, [str(shim)])
