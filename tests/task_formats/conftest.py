from task_mirrors import kernelbench_level3, mkb_reference  # noqa: F401 - fixtures
