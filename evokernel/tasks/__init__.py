"""Tasks: a PyTorch operator in KernelBench format, and what is read from it.

task.py (the Task, loading files and suites, size overrides), fit.py (scaling a task's sizes to a backend's
budget; the worker's memory limit), category.py (what kind of operator a task is, from its traced graph),
mkb.py (MultiKernelBench runs judged on the emulator)."""
