"""ascend-sim: the CPU emulator of the Ascend C programming model (runtime.cpp + include/) and its latency model."""
