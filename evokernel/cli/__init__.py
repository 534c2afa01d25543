"""The `evokernel` command: app.py (the entry point and the small commands: verify, doctor, suites), one module
per command group (run, eval, memory, model, ascend), their shared options (options.py, built from
evokernel.settings), doctor.py (can this machine run a backend?) and verify_server.py (a warm verifier the
CLI reuses). Each module imports only downwards (import contract cli-layers)."""
