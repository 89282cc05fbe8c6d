"""Batched scoring of given completions (``LlamaEngine.score_iter``, :mod:`dbpa_core.samplers.engine`).

The model reads each completion through the same stream loop as a generation (``_run_streams``), so a
completion's scores equal, bit for bit, those a generation of the same tokens reported (the module
docstring of :mod:`dbpa_core.samplers.engine`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np


class BatchedScoring:
    """The scoring half of :class:`~dbpa_core.samplers.engine.LlamaEngine`, which supplies ``n_ctx``,
    ``n_vocab`` and ``_run_streams``."""

    def score_iter(self, prompt: Sequence[int], completions: Sequence[Sequence[int]], statistics, *,
                   width: int = 32) -> Iterator[tuple[int, tuple[np.ndarray, ...]]]:
        """Yield ``(j, statistics of completion j's tokens)`` for each completion, as its last token is scored.

        The model reads each completion as it would have generated it: the
        prompt is evaluated once (its last row predicts every first token),
        then each completion is fed one token per forward step in its own
        stream holding a copy of the prompt's cache, up to ``width``
        completions sharing a step (a finished one's stream takes the next,
        longest first).  So the logits before token t are, bit for bit, those
        of a one-token-per-step evaluation and of a generation that drew the
        same tokens, whoever shares the step (module docstring).

        Parameters
        ----------
        prompt : sequence of int
        completions : sequence of sequences of int
        statistics : callable
            ``statistics(logits, tokens) -> tuple of arrays``: per row of
            ``logits`` (rows, n_vocab; float32, read-only, valid during the
            call) the statistics of the token in ``tokens`` that row
            predicts.  Called once per forward step on that step's rows.
        width : int
            Completions scored together.

        Yields
        ------
        j, arrays
            Completion ``j``'s statistics, one value per token (empty arrays
            for an empty completion).
        """
        completions = [list(c) for c in completions]
        if not completions:
            return
        longest = max(len(c) for c in completions)
        if len(prompt) + longest > self.n_ctx:
            raise ValueError(f"the prompt ({len(prompt)} tokens) and a completion of {longest} tokens exceed the "
                             f"{self.n_ctx}-token context (`n_ctx`).")
        for j, tokens in enumerate(completions):
            if not tokens:
                yield j, tuple(np.asarray(a)[:0] for a in statistics(np.zeros((0, self.n_vocab), np.float32), []))
        scored = sorted((j for j, c in enumerate(completions) if c), key=lambda j: -len(completions[j]))
        if not scored:
            return
        stacked = np.empty((min(int(width), len(scored)), self.n_vocab), np.float32)

        def begin(j: int) -> dict:
            return {"parts": [], "t": 0}

        def advance(rows: list[tuple[int, dict, np.ndarray]]) -> list[int | None]:
            for r, (_, _, logits) in enumerate(rows):
                stacked[r] = logits
            tokens = [completions[j][state["t"]] for j, state, _ in rows]
            values = statistics(stacked[:len(rows)], tokens)
            feeds: list[int | None] = []
            for r, (j, state, _) in enumerate(rows):
                state["parts"].append(tuple(v[r] for v in values))
                state["t"] += 1
                feeds.append(tokens[r] if state["t"] < len(completions[j]) else None)
            return feeds

        for j, state in self._run_streams(prompt, scored, longest, width, begin, advance):
            yield j, tuple(np.array(column) for column in zip(*state["parts"]))
