"""What a benchmark asks: prompts from a dataset or made up to a length (sans-I/O).

- :func:`read_dataset`: a JSON-lines file, one prompt a line (``{"prompt": "..."}``, or
  ``"text"``, or ``"messages"`` in the chat shape ``[{"role": "user", "content": ...}]``;
  ``"output_tokens"`` or ``"max_tokens"`` asks for that many output tokens), or a
  ShareGPT file (a JSON array, or JSON lines, of ``{"conversations": [{"from": "human",
  "value": ...}, {"from": "gpt", "value": ...}]}``): each conversation's first human turn
  is the prompt and the reply that follows sets its output length, as vLLM's and
  GuideLLM's ShareGPT datasets do.
- :func:`synthetic_prompts`: prompts of random words whose input and output lengths, in
  tokens, are drawn from a :class:`Lengths` distribution.

Both are seeded: the same seed gives the same prompts in the same order.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
import orjson

from ..client.estimate import heuristic_tokens

__all__ = [
    "BenchPrompt",
    "DatasetFormat",
    "Lengths",
    "WORDS",
    "read_dataset",
    "synthetic_prompts",
]

DatasetFormat = Literal["auto", "jsonl", "sharegpt"]
"""How :func:`read_dataset` reads a file: ``auto`` tells ShareGPT's conversations apart."""


@attrs.frozen
class BenchPrompt:
    """One prompt of a benchmark: its ``messages`` (chat shape: role and content), the
    output tokens it asks for (``max_tokens``; None: the server's own limit) and its input
    length in tokens as the heuristic counts it
    (:func:`~solon_events.client.estimate.heuristic_tokens`)."""

    messages: tuple[Mapping[str, Any], ...]
    output_tokens: int | None = None
    input_tokens: int = 0

    @classmethod
    def of(cls, text: str, output_tokens: int | None = None) -> BenchPrompt:
        """A one-message prompt of user ``text``."""
        return cls(({"role": "user", "content": text},), output_tokens, heuristic_tokens(text))


@attrs.frozen
class Lengths:
    """A distribution of lengths in tokens: ``fixed`` (always ``mean``), ``uniform``
    (``low`` to ``high``), ``normal`` (``mean``, ``sd``, at least 1) or ``lognormal``
    (median ``mean``, ``sd`` the standard deviation of its log)."""

    kind: Literal["fixed", "uniform", "normal", "lognormal"] = "fixed"
    mean: float = 0
    sd: float = 0
    low: int = 0
    high: int = 0

    @classmethod
    def parse(cls, text: str) -> Lengths:
        """``"256"``, ``"uniform:128:512"``, ``"normal:256:32"`` or ``"lognormal:256:0.5"``."""
        kind, _, rest = text.strip().partition(":")
        try:
            if not rest:
                return cls("fixed", mean=_count(kind))
            numbers = [float(x) for x in rest.split(":")]
        except ValueError:
            raise ValueError(f"not a length distribution: {text!r}") from None
        if kind == "uniform" and len(numbers) == 2 and 0 < numbers[0] <= numbers[1]:
            return cls("uniform", low=int(numbers[0]), high=int(numbers[1]))
        if kind in ("normal", "lognormal") and len(numbers) == 2 and numbers[0] > 0:
            return cls(kind, mean=numbers[0], sd=abs(numbers[1]))  # type: ignore[arg-type]
        raise ValueError(
            f"not a length distribution: {text!r} (expected N, uniform:LOW:HIGH, "
            "normal:MEAN:SD or lognormal:MEDIAN:SIGMA)"
        )

    def draw(self, rng: random.Random) -> int:
        """One length, at least 1."""
        if self.kind == "uniform":
            value: float = rng.randint(self.low, self.high)
        elif self.kind == "normal":
            value = rng.gauss(self.mean, self.sd)
        elif self.kind == "lognormal":
            value = rng.lognormvariate(math.log(self.mean), self.sd)
        else:
            value = self.mean
        return max(1, round(value))

    def __str__(self) -> str:
        if self.kind == "fixed":
            return f"{self.mean:g}"
        if self.kind == "uniform":
            return f"uniform:{self.low}:{self.high}"
        return f"{self.kind}:{self.mean:g}:{self.sd:g}"


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError
    return value


WORDS = (
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "name",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
)
"""The words of synthetic prompts: each one token of common BPE vocabularies (with its
leading space)."""


def synthetic_prompts(
    count: int, input_tokens: Lengths, output_tokens: Lengths | None = None, seed: int = 0
) -> list[BenchPrompt]:
    """``count`` prompts of random words, each ``input_tokens`` long (a draw), asking for
    ``output_tokens`` (a draw; None: no limit asked)."""
    rng = random.Random(f"prompts:{seed}")
    prompts = []
    for _ in range(count):
        length = input_tokens.draw(rng)
        text = " ".join(rng.choice(WORDS) for _ in range(length))
        wanted = output_tokens.draw(rng) if output_tokens is not None else None
        prompts.append(BenchPrompt(({"role": "user", "content": text},), wanted, length))
    return prompts


def read_dataset(
    path: str | Path, fmt: DatasetFormat = "auto", *, seed: int = 0, shuffle: bool = True
) -> list[BenchPrompt]:
    """The prompts of a JSON-lines or ShareGPT file (see the module's docs), shuffled by
    ``seed`` unless ``shuffle`` is False; a file with no usable prompt raises ValueError."""
    raw = Path(path).read_bytes()
    records = _records(raw, path)
    prompts: list[BenchPrompt] = []
    for number, record in enumerate(records, 1):
        sharegpt = isinstance(record, Mapping) and "conversations" in record
        if fmt == "sharegpt" or (fmt == "auto" and sharegpt):
            found = _sharegpt_prompt(record)
        else:
            found = _jsonl_prompt(record, path, number)
        if found is not None:
            prompts.append(found)
    if not prompts:
        raise ValueError(f"{path}: no prompt found (see the dataset formats of 'bench --help')")
    if shuffle:
        random.Random(f"dataset:{seed}").shuffle(prompts)
    return prompts


def _records(raw: bytes, path: str | Path) -> Sequence[Any]:
    text = raw.lstrip()
    if text.startswith(b"["):
        try:
            loaded = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise ValueError(f"{path}: not JSON ({error})") from None
        return loaded if isinstance(loaded, list) else [loaded]
    records = []
    for number, line in enumerate(raw.splitlines(), 1):
        if line.strip():
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError as error:
                raise ValueError(f"{path}, line {number}: not JSON ({error})") from None
    return records


def _jsonl_prompt(record: Any, path: str | Path, number: int) -> BenchPrompt:
    if isinstance(record, str):
        return BenchPrompt.of(record)
    if not isinstance(record, Mapping):
        raise ValueError(f"{path}, record {number}: expected an object or a string")
    wanted = record.get("output_tokens", record.get("max_tokens"))
    if wanted is not None and (not isinstance(wanted, int) or wanted < 1):
        raise ValueError(f"{path}, record {number}: output_tokens must be a whole number >= 1")
    messages = record.get("messages")
    if isinstance(messages, list) and messages:
        if not all(isinstance(m, Mapping) and "role" in m for m in messages):
            raise ValueError(f"{path}, record {number}: each message needs a role")
        text = " ".join(str(m.get("content") or "") for m in messages)
        return BenchPrompt(tuple(messages), wanted, heuristic_tokens(text))
    text = record.get("prompt", record.get("text"))
    if not isinstance(text, str) or not text:
        raise ValueError(f"{path}, record {number}: no prompt, text or messages")
    return BenchPrompt.of(text, wanted)


_HUMAN = frozenset({"human", "user"})
_MODEL = frozenset({"gpt", "assistant", "model", "chatgpt", "bard"})


def _sharegpt_prompt(record: Any) -> BenchPrompt | None:
    """The first human turn and the length of the reply that follows it (None for a
    conversation without both, or with an empty one)."""
    turns = record.get("conversations") if isinstance(record, Mapping) else None
    if not isinstance(turns, list):
        return None
    for turn, reply in itertools.pairwise(turns):
        if not (isinstance(turn, Mapping) and isinstance(reply, Mapping)):
            return None
        if turn.get("from") in _HUMAN and reply.get("from") in _MODEL:
            prompt, answer = str(turn.get("value") or ""), str(reply.get("value") or "")
            if prompt.strip() and answer.strip():
                return BenchPrompt.of(prompt, heuristic_tokens(answer) or 1)
            return None
    return None
