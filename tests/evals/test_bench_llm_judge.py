"""The judge bench's plumbing with a scripted judge (the real model's numbers: docs/verifier.md)."""
import json

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from evokernel.evals.bench import bench_llm_judge
from evokernel.generators.llm import LLMGenerator
from evokernel.verifier.trusted import llm_judge

_JudgeClass = llm_judge.LLMJudge


def test_bench_counts_false_positives_and_catches(monkeypatch, tmp_path, capsys):
    replies = ["VERDICT: CHEATING\nKIND: approximation\nREASON: r1", "VERDICT: HONEST\nKIND: none\nREASON: ok",
               "no idea", "VERDICT: CHEATING\nKIND: skipped-work\nREASON: r2"]
    fake = LLMGenerator(FakeListChatModel(responses=replies), name="fake:judge")
    monkeypatch.setattr(llm_judge, "LLMJudge", lambda spec: _JudgeClass(fake))
    out = tmp_path / "rows.jsonl"
    assert bench_llm_judge.main(["--model", "fake", "--limit", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["flagged"] for r in rows] == [True, False, None, True]  # 2 honest, then 2 attacks
    assert rows[0]["set"].startswith("honest/") and rows[2]["set"].startswith("attack/")
    assert "false-positive rate 50.0% on 2 honest kernels" in text and "OFF by default" in text
    assert "false positive:" in text and "r1" in text


def test_bench_samples_and_filters_attack_classes(monkeypatch, tmp_path):
    fake = LLMGenerator(FakeListChatModel(responses=["VERDICT: HONEST"]), name="fake:judge")
    monkeypatch.setattr(llm_judge, "LLMJudge", lambda spec: _JudgeClass(fake))
    out = tmp_path / "rows.jsonl"
    assert bench_llm_judge.main(["--model", "fake", "--limit", "3", "--classes", "5", "--json", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    attacks = [r for r in rows if r["set"].startswith("attack/")]
    assert len(rows) == 6 and len(attacks) == 3 and all(r["set"] == "attack/5-scalar-approx" for r in attacks)
