// The verifier's <torch/extension.h> for load_inline candidates (verifier/trusted/inline_binding.py): torch's
// C++ API without its Python bindings. torch's own header adds <torch/python.h> (Python.h and pybind11) for the
// binding code, which the verifier generates in a unit of its own; a candidate's unit has no use for Python.
#pragma once
#include <torch/all.h>
