"""Process-level services shared by the CLI, the graph and the evals: where files live (paths.py), a run's
directory record (run_dir.py), Ray (ray_cluster.py), the user's stop request (stop_request.py), the process-wide
fx tracing lock (torch_trace.py), facts about other processes (processes.py) and which code decides a verdict
(code_version.py)."""
