"""Replay of recorded responses (``assets/recorded/*.jsonl``).

Each line is one response: ``{"prompt", "system", "text", ...}``.  Sampling
draws *without replacement* in an order fixed by the seed, so sample i is the
same whether 10 or 20 are asked for, and asking for more than were recorded
is an error rather than a silent repeat.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .._validation import check_texts
from ..data.assets import RECORDED_DIR
from .base import Completion, DEFAULT_TEMPERATURE, Sampler


class RecordedSampler(Sampler):
    """Replays recorded responses.

    Parameters
    ----------
    path : str or Path, optional
        A ``.jsonl`` file or a folder of them; default ``assets/recorded``.
    responses : mapping, optional
        ``{prompt: [texts]}`` or ``{(prompt, system): [texts]}`` given directly
        (e.g. uploaded samples); used instead of ``path``.
    model : str
        Name of the model that produced the responses (part of the store key).
    """

    name = "recorded"
    default_temperature = DEFAULT_TEMPERATURE["recorded"]
    empty_retries = 0  # deterministic per seed: asking again returns the same reply

    def __init__(self, path: str | Path | None = None, *, responses: Mapping | None = None, model: str | None = None):
        self._arms: dict[tuple[str, str], list[str]] = {}
        self._models: set[str] = set()
        if responses is not None:
            for key, texts in responses.items():
                prompt, system = key if isinstance(key, tuple) else (key, "")
                self._arms[(prompt, system or "")] = check_texts(texts, f"responses[{key!r}]", min_rows=1)
        else:
            self._load(Path(path) if path is not None else RECORDED_DIR)
        self._model = model or (sorted(self._models)[0] if len(self._models) == 1 else "recorded")

    @property
    def model(self) -> str:
        return self._model

    def _load(self, path: Path) -> None:
        from ..data.files import check_kind, read_bounded
        from ..data.uploads import MAX_BYTES

        check_kind(path, "path", folder_ok=True)  # type before open: never a named pipe or /dev/zero
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        if not files or not files[0].exists():
            raise ValueError(f"`path`: no recorded responses found at {path}; run scripts/record_samples.py.")
        for file in files:
            rows: dict[tuple[str, str], list[tuple[int, str]]] = {}
            data = read_bounded(file, "path", MAX_BYTES, what="file of recorded responses")
            try:
                content = data.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"`path`: {file.name} is not UTF-8 text (byte {error.start}).") from None
            for number, line in enumerate(content.split("\n"), start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    key = (row["prompt"], row.get("system") or "")
                    text = row["text"]
                except (json.JSONDecodeError, KeyError, TypeError) as error:
                    raise ValueError(f"{file.name}, line {number}: expected a JSON object with `prompt` and "
                                     f"`text` ({error}).") from None
                if not isinstance(text, str):
                    raise ValueError(f"{file.name}, line {number}: `text` must be a string.")
                rows.setdefault(key, []).append((int(row.get("index", len(rows.get(key, [])))), text))
                if row.get("model"):
                    self._models.add(str(row["model"]))
            for key, indexed in rows.items():
                self._arms.setdefault(key, []).extend(text for _, text in sorted(indexed))

    def available(self, prompt: str, system: str | None = None) -> int:
        """How many responses were recorded for this prompt (0 if none)."""
        return len(self._arms.get((prompt, system or ""), ()))

    def sample_completions(self, prompt, n, *, system=None, temperature=None, max_tokens=None, seed=0,
                           store=None, progress=None, on_sample=None):
        # Checked up front so that the error comes before any work.
        available = self.available(prompt, system)
        if available == 0:
            raise ValueError("`prompt`: no responses were recorded for this prompt"
                             + (" and system prompt" if system else "")
                             + "; pick a recorded scenario arm or use the simulated/local sampler.")
        if isinstance(n, int) and n > available:
            raise ValueError(f"`n`: only {available} responses were recorded for this prompt; "
                             f"ask for at most {available} or use a live sampler.")
        return super().sample_completions(prompt, n, system=system, temperature=temperature, max_tokens=max_tokens,
                                          seed=seed, store=store, progress=progress, on_sample=on_sample)

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        texts = self._arms[(prompt, system or "")]
        # One order per user seed: indices 0..n-1 are n distinct responses.
        order = np.random.default_rng([seed, len(texts)]).permutation(len(texts))
        return Completion(texts[int(order[index])])
