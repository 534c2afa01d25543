"""What an LLM call costs: a model's list price per million tokens, and the table runs look prices up in.

LangChain reports tokens (usage_metadata), never prices: this table (and its overrides, ``--prices``) is the only
source of cost. Used by the LLM generator (evokernel.generators.llm) and the local model (0 USD).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT_PRICES", "Price", "Prices"]


@dataclass(frozen=True)
class Price:
    """USD per one million input / output tokens; ``cached_input_per_m``: per million input tokens read from
    the provider's prompt cache (None: priced as uncached input)."""

    input_per_m: float
    output_per_m: float
    cached_input_per_m: float | None = None

    def cost(self, tokens_in: int, tokens_out: int, cache_read: int = 0) -> float:
        cached = min(max(cache_read, 0), tokens_in) if self.cached_input_per_m is not None else 0
        return ((tokens_in - cached) * self.input_per_m + cached * (self.cached_input_per_m or 0.0)
                + tokens_out * self.output_per_m) / 1_000_000


# List prices (USD per 1M tokens, uncached input) as published by the providers when this table was
# written; they change. LangChain reports tokens (usage_metadata), never prices, so this table (and its
# overrides: Prices({...}) or Prices.parse("MODEL=IN/OUT[/CACHED_IN]")) is the only source of cost.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "o4-mini": Price(1.10, 4.40),
    "deepseek-chat": Price(0.28, 0.42),
    "deepseek-reasoner": Price(0.28, 0.42),
}


class Prices:
    """Model -> :class:`Price`, with the built-in table underneath unless ``include_defaults=False``.

    Lookup drops a ``provider:`` prefix and matches exactly, then by the longest known prefix
    (``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``).
    """

    def __init__(self, table: Mapping[str, Price | tuple[float, float]] | None = None, *,
                 include_defaults: bool = True):
        self.table: dict[str, Price] = dict(DEFAULT_PRICES) if include_defaults else {}
        for model, price in (table or {}).items():
            self.table[model] = price if isinstance(price, Price) else Price(*(float(p) for p in price))

    @classmethod
    def parse(cls, text: str, include_defaults: bool = True) -> Prices:
        """``"gpt-4o-mini=0.15/0.6,my-model=0/0,claude-x=3/15/0.3"`` (USD per 1M input/output tokens, and
        optionally per 1M input tokens read from the prompt cache)."""
        table: dict[str, Price] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            model, sep, value = part.partition("=")
            numbers = value.split("/")
            try:
                if not sep or len(numbers) not in (2, 3) or not model.strip():
                    raise ValueError
                table[model.strip()] = Price(*(float(n) for n in numbers))
            except ValueError:
                raise ValueError(f"bad price {part!r}: expected MODEL=IN/OUT[/CACHED_IN] in USD per 1M tokens, "
                                 "e.g. gpt-4o-mini=0.15/0.6") from None
        return cls(table, include_defaults=include_defaults)

    def lookup(self, model: str) -> Price | None:
        name = model.split(":", 1)[1] if ":" in model else model
        name = name.rsplit("/", 1)[-1]  # "deepseek-ai/deepseek-chat" style ids
        if name in self.table:
            return self.table[name]
        best = max((k for k in self.table if name.startswith((k + "-", k + ":"))),
                   key=len, default=None)
        return self.table[best] if best else None

    def cost(self, model: str, tokens_in: int, tokens_out: int, cache_read: int = 0) -> tuple[float, bool]:
        """``(cost in USD, whether the model's price is known)``; unknown models cost 0."""
        price = self.lookup(model)
        return (price.cost(tokens_in, tokens_out, cache_read), True) if price else (0.0, False)
