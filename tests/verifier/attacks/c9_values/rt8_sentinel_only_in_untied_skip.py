"""Valid-token count that never looks at the labels (answers seq_len for every row): the -100 sentinel is planted
only in the trial that does not compare integer outputs.

CLASS: c2_values
TASK: task_valid_token_count.py
SET: batch_size=64 seq_len=512 vocab=1000
SUCCESS: feasible
NEW: yes (the newest code: integer_inputs x the ties rule)
The trick: integer_inputs.PLANTED_IN = ("special",): boundaries and sentinels (-1, -100, -(max+1)) reach integer inputs
only in `special` trials; and in `special` trials (TIES) an integer output of the right shape and dtype is not
compared at all (tied_index). The `distinct` trials, where integer outputs are compared, plant no sentinels, and
get_inputs draws only [0, vocab). So an integer output that depends on a sentinel is never judged on one: a kernel
that ignores ignore_index entirely is feasible. Expected: feasible. Verdict: run.py table.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void count_valid(const int64_t* labels, int64_t* out, int64_t rows, int64_t cols) {
    (void)labels;
    for (int64_t r = 0; r < rows; ++r) out[r] = cols;
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, labels):
        labels = labels.contiguous()
        out = torch.empty(labels.shape[0], dtype=torch.int64)
        lib.count_valid(labels, out, labels.shape[0], labels.shape[1])
        return out
