"""A FAKE torch_npu that behaves like the real one on a machine without CANN: it reports the libhccl.so
load failure with the advice to source set_env.sh and ends the interpreter with sys.exit()
(ascend-toolchain.md §4, §7; the wording here is ours, the recorded keys are libhccl.so and set_env.sh)."""
import sys

print("libhccl.so: cannot open shared object file: No such file or directory. "
      "Please run 'source set_env.sh' in the CANN installation path.")
sys.exit()
