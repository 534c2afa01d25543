"""The ascend-sim backend: Ascend C operator projects on a CPU emulator of the Ascend C API.

Trusted side (the verifier's process): project.py / binding.py (reading a candidate; pure text, also
used in the sandbox), build.py (sandboxed g++ builds, cached), backend.py (the Backend), hardware.py
(the 910B constants, one place) and latency_model.py (estimates). The emulator itself (include/,
runtime.cpp) is compiled into each candidate's library and runs inside the sandboxed worker
(verifier/sandboxed/ascend_ops.py). See docs/ascend-sim.md and docs/ascend-sim-latency.md.
"""
