"""Task formats besides KernelBench's own, each turned into a KernelBench task on load.

* :mod:`.cases` -- NPUKernelBench (MultiKernelBench's ``npukernelbench_level*``): ``get_input_groups()`` over a
  JSON-lines file of cases (several shapes and dtypes, non-tensor forward arguments); one task with N cases.
"""
