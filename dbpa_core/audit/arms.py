"""One arm of an audit drawn as the test needs it: samples through the store (resumed, never drawn twice), embeddings, and the one progress hook (:class:`RunUpdate`) that reports each output and each arm.

:func:`dbpa_core.audit.runner.run` builds one :class:`ArmSource` per arm of a request; a fixed-k test reads
:meth:`ArmSource.arm`, a sequential one reads batch by batch (:meth:`ArmSource.reader`).
"""

from __future__ import annotations


from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..data.provenance import get_sample_meta
from ..data.store import request_key
from .results import Arm


#: Backends whose outputs are computed on this machine in microseconds (no model, no network): a run that
#: may not sample (``offline``) still draws them.
COMPUTED_BACKENDS = ("simulated", "recorded")


@dataclass(frozen=True, eq=False)
class RunUpdate:
    """What a run reports as it goes: the one progress and streaming hook.

    Attributes
    ----------
    stage : {"sample", "sampling", "embedding", "drawn"}
        ``"sample"``: one output is there, as it arrives or (``stored``) from
        the store when a draw resumes; ``"drawn"``: the arm's outputs so far
        are sampled and embedded (``arm``; a sequential test reports one per batch).
    label : str
        The arm's label ("original" or the perturbation's).
    done, total : int
        Outputs of this arm sampled (or embedded) so far, of ``total``.
    arm : Arm or None
        The arm as drawn so far, on ``"drawn"``.
    index, output, stored
        On ``"sample"``: the output's index, its text, and whether it came from the store.
    """

    stage: str
    label: str
    done: int
    total: int
    arm: Arm | None = None
    index: int | None = None
    output: str | None = None
    stored: bool = False

    @property
    def text(self) -> str:
        return f"{self.stage} {self.label}"


#: progress(update) -> None, or False to cancel (the samples drawn so far stay in the store).
Progress = Callable[[RunUpdate], "bool | None"]


class NotStored(LookupError):
    """An offline run needs a sample or an embedding that the store does not hold."""


class _KeptSamples:
    """The two sample-store methods :meth:`Sampler.sample` uses, in memory (when no store is given)."""

    def __init__(self):
        self.samples: dict[tuple[str, int], tuple[str, list | None]] = {}
        self.meta: dict[tuple[str, int], dict] = {}

    def get_samples(self, description, indices):
        key = request_key(description)
        return {i: self.samples[key, i] for i in indices if (key, i) in self.samples}

    def put_sample(self, description, index, text, token_logprobs=None):
        """Keep a sample and return what is kept (the first write wins, as in the SQLite store)."""
        return self.samples.setdefault((request_key(description), int(index)), (text, token_logprobs))

    def put_sample_meta(self, description, index, meta):
        self.meta.setdefault((request_key(description), int(index)), meta)

    def get_sample_meta(self, description, indices):
        key = request_key(description)
        return {i: self.meta[key, i] for i in indices if (key, i) in self.meta}


class ArmSource:
    """The outputs of one arm's request, drawn in index order and embedded once.

    Sample i is the sampler's i-th draw of the request (its own seed), so
    asking for 10, then 20, then 30 draws indices 0..29 once each: with a
    ``store`` they are written as they arrive and a resumed run reuses them;
    without one they are kept here for the run.  A fixed-k arm is
    ``source.arm(k)``; a sequential test reads batches from :meth:`reader`
    (several tests may read one source, the shared original arm of a family).

    Parameters
    ----------
    sampler, prompt, label, system, temperature, max_tokens, seed
        The request.
    embedder, store
        Where vectors come from and where samples and vectors are kept.
    progress : callable(RunUpdate), optional
    offline : bool
        Never call a model or an embedder: raise :class:`NotStored` when the
        store lacks a sample of a live backend or an embedding.
    """

    def __init__(self, sampler, prompt: str, *, label: str, system: str = "", temperature=None, max_tokens=None,
                 seed: int = 0, embedder, store=None, progress: Progress | None = None, offline: bool = False):
        self.sampler, self.prompt, self.label, self.system = sampler, prompt, label, system or ""
        self.settings = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed}
        self.embedder, self.progress, self.offline = embedder, progress, offline
        self.kept = store is None
        self.store = _KeptSamples() if store is None else store
        self.texts: list[str] = []
        self.embeddings = np.empty((0, 0), dtype=np.float32)

    def _report(self, stage: str, done: int, total: int, arm: Arm | None = None, **sample):
        return self.progress(RunUpdate(stage, self.label, done, total, arm, **sample)) if self.progress else None

    def _samples_as_they_come(self, n: int):
        """The sampler's ``on_sample`` hook: what the store holds is reported first, then each new output."""
        if self.progress is None:
            return None
        description = self.sampler.describe_request(self.prompt, system=self.system or None, **self.settings)
        known = {i: text for i, (text, _) in self.store.get_samples(description, range(n)).items() if text.strip()}
        for count, index in enumerate(sorted(known), start=1):
            self._report("sample", count, n, index=index, output=known[index], stored=True)
        count = iter(range(len(known) + 1, n + 1))
        return lambda index, completion: self._report("sample", next(count), n, index=index,
                                                      output=completion.text)

    def _check_stored(self, n: int) -> None:
        if getattr(self.sampler, "name", "") in COMPUTED_BACKENDS:
            return
        description = self.sampler.describe_request(self.prompt, system=self.system or None, **self.settings)
        stored = self.store.get_samples(description, range(n))
        if sum(1 for text, _ in stored.values() if text.strip()) < n:
            raise NotStored(f"samples of {self.label!r} are not all stored")

    def _extend(self, n: int) -> None:
        if n <= len(self.texts):
            return
        if self.offline:
            self._check_stored(n)
        texts = self.sampler.sample(self.prompt, n, system=self.system or None, store=self.store,
                                    progress=lambda done, total: self._report("sampling", done, total),
                                    on_sample=self._samples_as_they_come(n), **self.settings)
        new_texts = texts[len(self.texts):]
        embedder_store = None if self.kept else self.store
        if self.offline and len(self.embedder_known(new_texts)) < len(set(new_texts)):
            raise NotStored(f"embeddings of {self.label!r} are not all stored")
        new = self.embedder.embed(new_texts, store=embedder_store,
                                  progress=lambda done, total: self._report("embedding", done, total))
        self.embeddings = new if not self.texts else np.vstack([self.embeddings, new])
        self.texts = list(texts)
        if self.progress is not None:
            self._report("drawn", n, n, self.arm(n))

    def embedder_known(self, texts) -> dict:
        return {} if self.kept else self.store.get_embeddings(self.embedder.key, list(texts))

    def reader(self, *, texts: bool = False) -> Callable[[int], np.ndarray | list[str]]:
        """``draw(n)`` for :func:`~dbpa_core.sequential_dbpa_test`: the next n outputs of this reader."""
        cursor = 0

        def draw(n: int):
            nonlocal cursor
            self._extend(cursor + n)
            rows = slice(cursor, cursor + n)
            cursor += n
            return self.texts[rows] if texts else self.embeddings[rows]

        return draw

    def arm(self, n: int) -> Arm:
        """The first ``n`` outputs as an :class:`Arm`."""
        self._extend(n)
        description = self.sampler.describe_request(self.prompt, system=self.system or None, **self.settings)
        # Simulated and replayed outputs describe no served model: no store read for them.
        meta = ({} if getattr(self.sampler, "name", "") in COMPUTED_BACKENDS
                else get_sample_meta(self.store, description, range(n)))
        return Arm(self.label, self.prompt, self.system, tuple(self.texts[:n]), self.embeddings[:n],
                   getattr(self.sampler, "model", ""), self.sample_ids(n), tuple(meta.get(i) for i in range(n)))

    def sample_ids(self, n: int) -> tuple[str, ...]:
        """"<request key>:<index>" names each sample in the store (and in reports)."""
        description = self.sampler.describe_request(self.prompt, system=self.system or None, **self.settings)
        key = request_key(description)[:16]
        return tuple(f"{key}:{i}" for i in range(n))


def draw_arm(sampler, prompt: str, k: int, *, label: str, system: str = "", temperature=None, max_tokens=None,
             seed: int = 0, embedder, store=None, progress: Progress | None = None) -> Arm:
    """Sample k outputs for one prompt and embed them (both cached in ``store``)."""
    return ArmSource(sampler, prompt, label=label, system=system, temperature=temperature, max_tokens=max_tokens,
                     seed=seed, embedder=embedder, store=store, progress=progress).arm(k)
