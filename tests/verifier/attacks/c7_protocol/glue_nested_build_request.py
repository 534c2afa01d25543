"""Class 7 - the protocol trusts the worker's bytes, and the worker's build hook forwards what the glue
passes: `load_inline(..., extra_cflags=deep)` with a list nested 978 levels deep, the most the
worker's shallow stack can encode. The parent decodes it deeper in its own stack (under the CLI,
pytest or the graph's verify node) and hits Python's recursion limit inside json.loads:
RecursionError escapes Verifier.verify, no verdict. Plain glue, no native code, no rule broken.
Defences: nesting limits in the message codec, a malformed build request a `compile`/`runtime`
verdict; the allow-list (a module-level loop) may stop it earlier."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

deep = []
for _ in range(978):
    deep = [deep]

ext = load_inline(name="evk_attack_nested", cpp_sources=["int f() { return 1; }"], functions=["f"],
                  extra_cflags=deep, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x
