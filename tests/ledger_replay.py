"""An oracle for value ledgers, independent of the fold under test: replay a ledger file line by line and check
that every logged r_hat, q_before and q_after is what the sequential fold gives at that line."""
import json

from evokernel.memory.values import DRAFT, REFINE, RewardNormalizer


def replay_check(path):
    """Replay ``path``; returns the final {(item, "q1"|"q2"): Q}. Import lines set values outright."""
    q, norm = {}, RewardNormalizer()
    for line in open(path).read().splitlines():
        e = json.loads(line)
        if e["stage"] == "import":
            for item, vals in e["set"].items():
                for k in ("q1", "q2"):
                    if k in vals:
                        q[(item, k)] = vals[k]
            continue
        if e["stage"] == REFINE:
            assert e["r_hat"] == norm.normalize(e["r"])
        key = "q1" if e["stage"] == DRAFT else "q2"
        for u in e["updates"]:
            before = q.get((u["item"], key), 0.0)
            assert u["q_before"] == before, (e["attempt_id"], u)
            q[(u["item"], key)] = before + e["alpha"] * (e["r_hat"] - before)
            assert u["q_after"] == q[(u["item"], key)]
    return q
