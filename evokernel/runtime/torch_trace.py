"""One lock for torch.fx tracing in this process.

``torch.fx.symbolic_trace`` patches ``nn.Module.__call__`` (and friends) process-wide while it traces, so an
``nn.Module`` called from another thread meanwhile is taken for part of the model being traced and fails
("module is not installed as a submodule"). With tasks side by side (``--concurrency K``) one task's template
analysis or category probe traces while another task's memory embeds its keys. Every fx trace in the process
and every in-process model call (the embedding model, a traced graph being run) holds :data:`FX_LOCK`.
"""
from __future__ import annotations

import threading

FX_LOCK = threading.RLock()
