"""The ascend backend: Ascend C operator projects built and run with the CANN toolchain on a real NPU.

Same six-string candidate format as ascend-sim (verifier/backends/ascend_sim/project.py). The toolchain
flow (msopgen -> build.sh -> custom_opp_*.run --install-path -> binding -> device subprocess -> msprof op)
follows the recorded behaviour in the team's toolchain notes (ascend-toolchain.md §1.1, §2-4, §8).

This package so far holds the pure-Python foundations, testable without an NPU:

- feedback.py   toolchain / runtime output -> short `Diagnosis` records an LLM can act on
- msprof.py     `msprof op` output folders -> `PipeProfile` (measured) and its bottleneck diagnosis
- diagnosis.py  the bound vocabulary and rules shared with the ascend-sim latency model's estimates
- toolchain.py  locate CANN; per candidate msopgen -> sources -> build.sh -> .run --install-path; device_env
- binding_build.py  the CppExtension binding (python_bind_src) built in place, per candidate
- device_runner.py  the fresh device subprocess (the only importer of torch_npu): correctness + NPU events

The orchestration (the Backend class wired into the verifier, msprof runs, device health checks) is not
written yet. Tests run against a fake toolchain in
tests/verifier/ascend/fake_cann/.
"""
