"""The ascend backend: Ascend C operator projects built with CANN and run on a real NPU (trusted side).

Same six-string candidate format as ascend-sim (verifier/backends/ascend_sim/project.py); the flow follows
the recorded behaviour in the team's toolchain notes (ascend-toolchain.md §1.1, §2-4, §7, §8):

- backend.py        AscendBackend: CANN, sandboxed content-cached builds, device processes, NPU claim/health
- toolchain.py      locate CANN; per candidate msopgen -> sources -> build.sh -> .run --install-path; device_env
- binding_build.py  the CppExtension binding (python_bind_src) built in place, per candidate
- include/pytorch_npu_helper.hpp  our EXEC_NPU_CMD (dlopen libcust_opapi.so, two-phase aclnn call)
- feedback.py       toolchain / runtime output -> short `Diagnosis` records an LLM can act on
- msprof.py         `msprof op` output folders -> `PipeProfile` (measured) and its bottleneck diagnosis
- diagnosis.py      the bound vocabulary and rules shared with the ascend-sim latency model's estimates

The verdict is decided in verifier/trusted/verifier.py (`_judge_device`). The process that runs the
candidate on the device is verifier/sandboxed/device_runner.py (the only importer of torch_npu).
NOT run on an NPU or a real CANN: tested against tests/verifier/ascend/fake_cann/ and fake_torch_npu/.
See docs/ascend.md.
"""
