"""The Sampler interface: one abstract method, everything else concrete.

A backend implements :meth:`Sampler.complete` (one output for one derived
seed); :meth:`Sampler.sample` adds what every backend needs: per-index seeds,
the sample store (reuse and resume), bounded concurrency, progress and
cancellation.  Backends are peers: the simulated one is not a special case.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._validation import check_positive_int

#: progress(done, total) -> None or bool; returning False cancels the run.
Progress = Callable[[int, int], "bool | None"]


@dataclass(frozen=True)
class Completion:
    """One sampled output.

    Attributes
    ----------
    text : str
        The output exactly as generated (may be empty; never dropped).
    token_logprobs : tuple of float, optional
        Log-probability of each generated token, where the backend has them.
    """

    text: str
    token_logprobs: tuple[float, ...] | None = None


class SamplingCancelled(RuntimeError):
    """Raised when a progress callback asks to stop; drawn samples stay in the store."""


def sample_seed(seed: int, index: int) -> int:
    """The seed of sample ``index``: independent streams from one user seed.

    Derived with ``numpy.random.SeedSequence`` so that sample i is the same
    whether 20 or 40 samples are asked for, and whatever the order in which
    concurrent calls finish.
    """
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


class Sampler(ABC):
    """Draws outputs y ~ S(x) from a language model (paper §3, step 1).

    Subclasses implement :meth:`complete` and set ``name``; they may override
    ``max_concurrency`` (parallel calls) and :meth:`identity` (what, besides
    the request, determines an output: never a secret).
    """

    name: ClassVar[str]
    default_temperature: ClassVar[float] = 0.7
    default_max_tokens: ClassVar[int] = 128
    max_concurrency: int = 1

    @abstractmethod
    def complete(self, prompt: str, *, system: str | None, temperature: float, max_tokens: int,
                 seed: int, index: int) -> Completion:
        """Generate output number ``index`` of a request with user seed ``seed``.

        Backends that take a seed per call use ``sample_seed(seed, index)``,
        so that every index is an independent, reproducible draw.
        """

    @property
    def model(self) -> str:
        return self.name

    def identity(self) -> dict:
        """Backend settings that change outputs (a store key part; no secrets)."""
        return {"backend": self.name, "model": self.model}

    def describe_request(self, prompt: str, *, system: str | None = None, temperature: float | None = None,
                         max_tokens: int | None = None, seed: int = 0) -> dict:
        """The full key of a request, with defaults filled in."""
        temperature, max_tokens = self._settings(temperature, max_tokens)
        return {**self.identity(), "prompt": prompt, "system": system or "", "temperature": temperature,
                "max_tokens": max_tokens, "seed": int(seed)}

    def sample(self, prompt: str, n: int, *, system: str | None = None, temperature: float | None = None,
               max_tokens: int | None = None, seed: int = 0, store=None, progress: Progress | None = None
               ) -> list[str]:
        """Draw ``n`` outputs for ``prompt``.

        Parameters
        ----------
        prompt : str
            The user message, exactly as sent.
        n : int
            Number of outputs k (≥ 1).  Sample i always has the seed
            ``sample_seed(seed, i)``, so a larger n extends a smaller one.
        system : str, optional
            System prompt (a *system perturbation* changes this).
        temperature, max_tokens : optional
            Generation settings; backend defaults when None.
        seed : int
            User seed (≥ 0).
        store : SampleStore, optional
            Samples already stored for this request are reused; new ones are
            written one by one as they arrive (an interrupted run resumes).
        progress : callable(done, total), optional
            Called after each sample; returning False cancels
            (:class:`SamplingCancelled`) and keeps what was drawn.

        Returns
        -------
        list of str
            Exactly ``n`` texts, in index order; empty outputs are kept.
        """
        return [c.text for c in self.sample_completions(prompt, n, system=system, temperature=temperature,
                                                        max_tokens=max_tokens, seed=seed, store=store,
                                                        progress=progress)]

    def sample_completions(self, prompt: str, n: int, *, system: str | None = None,
                           temperature: float | None = None, max_tokens: int | None = None, seed: int = 0,
                           store=None, progress: Progress | None = None) -> list[Completion]:
        """As :meth:`sample`, returning :class:`Completion` objects (with logprobs where available)."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("`prompt` must be a non-empty string: type the prompt to send.")
        if system is not None and not isinstance(system, str):
            raise ValueError("`system` must be a string or None.")
        n = check_positive_int(n, "n")
        seed = check_positive_int(seed, "seed", minimum=0)
        temperature, max_tokens = self._settings(temperature, max_tokens)
        description = self.describe_request(prompt, system=system, temperature=temperature,
                                            max_tokens=max_tokens, seed=seed)
        results: dict[int, Completion] = {}
        if store is not None:
            for index, (text, logprobs) in store.get_samples(description, range(n)).items():
                results[index] = Completion(text, tuple(logprobs) if logprobs is not None else None)
        missing = [i for i in range(n) if i not in results]
        done = len(results)
        if progress is not None and done and progress(done, n) is False:
            raise SamplingCancelled(f"cancelled after {done} of {n} samples (all stored).")

        def draw(index: int) -> Completion:
            completion = self.complete(prompt, system=system, temperature=temperature, max_tokens=max_tokens,
                                       seed=seed, index=index)
            if not isinstance(completion.text, str):
                raise TypeError(f"{type(self).__name__}.complete must return text; got {type(completion.text)}")
            if store is not None:
                store.put_sample(description, index, completion.text,
                                 list(completion.token_logprobs) if completion.token_logprobs else None)
            return completion

        def record(index: int, completion: Completion) -> None:
            nonlocal done
            results[index] = completion
            done += 1
            if progress is not None and progress(done, n) is False:
                raise SamplingCancelled(f"cancelled after {done} of {n} samples (all stored).")

        if self.max_concurrency <= 1 or len(missing) <= 1:
            for index in missing:
                record(index, draw(index))
        else:
            self._draw_concurrently(missing, draw, record)
        return [results[i] for i in range(n)]

    def _draw_concurrently(self, missing, draw, record) -> None:
        # At most max_concurrency calls in flight; the main thread records
        # results (and so runs the progress callback, which may touch a UI).
        pending_indices = iter(missing)
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            in_flight = {}
            for index in pending_indices:
                in_flight[pool.submit(draw, index)] = index
                if len(in_flight) >= self.max_concurrency:
                    break
            try:
                while in_flight:
                    finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    for future in finished:
                        index = in_flight.pop(future)
                        record(index, future.result())
                        next_index = next(pending_indices, None)
                        if next_index is not None:
                            in_flight[pool.submit(draw, next_index)] = next_index
            except BaseException:
                for future in in_flight:
                    future.cancel()
                raise

    def _settings(self, temperature, max_tokens) -> tuple[float, int]:
        temperature = self.default_temperature if temperature is None else temperature
        try:
            temperature = float(temperature)
        except (TypeError, ValueError):
            raise ValueError(f"`temperature` must be a number >= 0; got {temperature!r}.") from None
        if not (np.isfinite(temperature) and 0 <= temperature <= 5):
            raise ValueError(f"`temperature` must lie in [0, 5]; got {temperature}.")
        max_tokens = check_positive_int(self.default_max_tokens if max_tokens is None else max_tokens, "max_tokens")
        return temperature, max_tokens
