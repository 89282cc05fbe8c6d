"""The Sampler interface: one abstract method, everything else concrete.

A backend implements :meth:`Sampler.complete` (one output for one derived
seed); :meth:`Sampler.sample` adds what every backend needs: per-index seeds,
the sample store (reuse and resume), bounded concurrency, progress,
cancellation, and the refusal of empty replies.  Backends are peers: the
simulated one is not a special case.

An empty or null reply (a content filter, a tool call) is not an output of
the model under test: stored as a sample it would be reused on every later
run, and a run of them makes both arms identical, which reads as "no change"
(p = 1).  Such replies are asked for again and, if they persist, the run
stops with :class:`SamplingFailed`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from .._validation import check_positive_int, check_temperature, redact
from ..data.provenance import put_sample_meta

#: Temperature used when none is given.  The simulated model's facet weights
#: are calibrated at T = 1; replaying ignores it (0 marks "not applicable").
DEFAULT_TEMPERATURE = MappingProxyType({"simulated": 1.0, "recorded": 0.0, "local": 0.7, "openai": 0.7})

#: progress(done, total) -> None or bool; returning False cancels the run.
Progress = Callable[[int, int], "bool | None"]
#: on_sample(index, completion): each new output as it is recorded (a live view follows the draw with it).
OnSample = Callable[[int, "Completion"], None]


@dataclass(frozen=True)
class Completion:
    """One sampled output.

    Attributes
    ----------
    text : str
        The output exactly as generated (may be empty; never dropped).
    token_logprobs : tuple of float, optional
        Log-probability of each generated token, where the backend has them.
    meta : mapping, optional
        What the reply said about itself, where the backend says it (an
        OpenAI-compatible server: served ``model``, ``system_fingerprint``,
        token ``usage``); stored beside the sample, never part of its key.
    """

    text: str
    token_logprobs: tuple[float, ...] | None = None
    meta: Mapping[str, Any] | None = field(default=None, compare=False)


class SamplingCancelled(RuntimeError):
    """Raised when a progress callback asks to stop; drawn samples stay in the store."""


class EndpointError(RuntimeError):
    """A model or embedding endpoint could not give an answer (network, HTTP error, bad reply).

    Attributes
    ----------
    url : str
        Where the call went (credentials removed), or the backend's name.
    reason : str
        What went wrong and what to do about it, in one or two sentences.
    """

    def __init__(self, url: str, reason: str):
        # A reason may quote the server (a 401 body repeating the key's tail): never a credential in it.
        self.url, self.reason = redact(str(url)), redact(str(reason))
        super().__init__(f"{self.url}: {self.reason}")


class SamplingFailed(EndpointError):
    """Sampling stopped before ``n_requested`` samples: :attr:`n_kept` of them are in the store.

    The one exception a caller (the app, the command line) needs to catch
    for every backend failure; running the same request again resumes.
    """

    def __init__(self, url: str, reason: str, n_kept: int | None = 0, n_requested: int = 0):
        self.n_kept, self.n_requested = n_kept, n_requested
        super().__init__(url, reason)
        kept = ("No sample store was used, so nothing was kept." if n_kept is None else
                f"{n_kept} of {n_requested} samples of this arm are kept in the store; run again to resume "
                "from there.")
        self.args = (f"{self.url}: {self.reason} {kept}",)


def _check_request(prompt, system) -> None:
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("`prompt` must be a non-empty string: type the prompt to send.")
    if system is not None and not isinstance(system, str):
        raise ValueError("`system` must be a string or None.")


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
    #: Extra calls for an index whose reply was empty; 0 for backends that are
    #: deterministic per seed (asking again would return the same reply).
    empty_retries: ClassVar[int] = 2
    max_concurrency: int = 1
    #: True for backends that draw many samples of one prompt together (:meth:`complete_many`).
    batched: ClassVar[bool] = False

    @abstractmethod
    def complete(self, prompt: str, *, system: str | None, temperature: float, max_tokens: int,
                 seed: int, index: int) -> Completion:
        """Generate output number ``index`` of a request with user seed ``seed``.

        Backends that take a seed per call use ``sample_seed(seed, index)``,
        so that every index is an independent, reproducible draw.
        """

    def complete_many(self, prompt: str, indices: list[int], *, system: str | None, temperature: float,
                      max_tokens: int, seed: int) -> Iterator[tuple[int, Completion]]:
        """Yield ``(index, completion)`` for every index, in the order they finish.

        Used instead of :meth:`complete` when ``batched`` is True; each
        output must be the one :meth:`complete` gives for its index, so that
        a resumed or extended run is the run it continues.
        """
        for index in indices:
            yield index, self.complete(prompt, system=system, temperature=temperature, max_tokens=max_tokens,
                                       seed=seed, index=index)

    def complete_seeds(self, prompt: str, requests: list[tuple[int, int]], *, system: str | None,
                       temperature: float, max_tokens: int) -> Iterator[tuple[int, Completion]]:
        """Yield ``(k, completion)`` for every ``requests[k] = (seed, index)``, in the order they finish.

        :meth:`complete_many` across user seeds, used by :meth:`sample_seeds`
        when ``batched`` is True; each output must be the one :meth:`complete`
        gives for its seed and index.
        """
        for k, (seed, index) in enumerate(requests):
            yield k, self.complete(prompt, system=system, temperature=temperature, max_tokens=max_tokens,
                                   seed=seed, index=index)

    @property
    def model(self) -> str:
        return self.name

    @property
    def endpoint(self) -> str:
        """Where outputs come from, for messages (a URL without credentials, a file, or the backend)."""
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
               max_tokens: int | None = None, seed: int = 0, store=None, progress: Progress | None = None,
               on_sample: OnSample | None = None) -> list[str]:
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
        on_sample : callable(index, completion), optional
            Called with each new sample as it is recorded (already in the
            store), in the order they finish, on the calling thread, just
            before ``progress``; samples reused from the store are not reported.

        Returns
        -------
        list of str
            Exactly ``n`` non-empty texts, in index order.

        Raises
        ------
        SamplingFailed
            The backend failed (network, HTTP error, malformed or persistently
            empty replies); says how many samples are kept in the store.
        SamplingCancelled
            ``progress`` returned False.
        """
        return [c.text for c in self.sample_completions(prompt, n, system=system, temperature=temperature,
                                                        max_tokens=max_tokens, seed=seed, store=store,
                                                        progress=progress, on_sample=on_sample)]

    def sample_completions(self, prompt: str, n: int, *, system: str | None = None,
                           temperature: float | None = None, max_tokens: int | None = None, seed: int = 0,
                           store=None, progress: Progress | None = None, on_sample: OnSample | None = None,
                           drawn: Mapping[int, Completion] | None = None) -> list[Completion]:
        """As :meth:`sample`, returning :class:`Completion` objects (with logprobs where available).

        ``drawn``: the backend's replies for some indices, already generated
        (by :meth:`sample_seeds`); they are checked and stored as replies of
        :meth:`complete` would be, and the other missing indices are drawn one by one.
        """
        _check_request(prompt, system)
        n = check_positive_int(n, "n")
        seed = check_positive_int(seed, "seed", minimum=0)
        temperature, max_tokens = self._settings(temperature, max_tokens)
        description = self.describe_request(prompt, system=system, temperature=temperature,
                                            max_tokens=max_tokens, seed=seed)
        results: dict[int, Completion] = {}
        if store is not None:
            for index, (text, logprobs) in store.get_samples(description, range(n)).items():
                if text.strip():  # an empty sample stored by an older version is drawn again
                    results[index] = Completion(text, tuple(logprobs) if logprobs is not None else None)
        missing = [i for i in range(n) if i not in results]
        done = len(results)
        if progress is not None and done and progress(done, n) is False:
            raise SamplingCancelled(f"cancelled after {done} of {n} samples (all stored).")

        def draw(index: int, completion: Completion | None = None) -> Completion:
            # ``completion``: already generated by complete_many; asked again only while empty.
            for attempt in range(1 + self.empty_retries):
                if completion is None or attempt:
                    completion = self.complete(prompt, system=system, temperature=temperature,
                                               max_tokens=max_tokens, seed=seed, index=index)
                if not isinstance(completion.text, str):
                    raise TypeError(f"{type(self).__name__}.complete must return text; got {type(completion.text)}")
                if completion.text.strip():
                    break
            else:
                raise EndpointError(self.endpoint, f"sample {index} came back empty (or null) "
                                    f"{1 + self.empty_retries} time(s) and was refused: a content filter, a tool "
                                    "call or too small `max_tokens`? Change the prompt or the settings.")
            if store is not None:
                # Another writer may have stored this slot first: use its sample, so that what is
                # reported is exactly what the store replays.
                text, logprobs = store.put_sample(description, index, completion.text,
                                                  list(completion.token_logprobs) if completion.token_logprobs
                                                  else None)
                if completion.meta and text == completion.text:  # the reply's meta describes the stored text
                    put_sample_meta(store, description, index, completion.meta)
                completion = Completion(text, tuple(logprobs) if logprobs is not None else None,
                                        completion.meta if text == completion.text else None)
            return completion

        def record(index: int, completion: Completion) -> None:
            nonlocal done
            results[index] = completion
            done += 1
            if on_sample is not None:
                on_sample(index, completion)
            if progress is not None and progress(done, n) is False:
                raise SamplingCancelled(f"cancelled after {done} of {n} samples (all stored).")

        try:
            if drawn is not None:
                for index in missing:
                    record(index, draw(index, drawn.get(index)))
            elif self.batched and len(missing) > 1:
                # Each sample is stored as soon as its sequence ends; closing the generator
                # (a cancel, an error) ends the batch and frees the backend at once.
                with closing(self.complete_many(prompt, missing, system=system, temperature=temperature,
                                                max_tokens=max_tokens, seed=seed)) as finished:
                    for index, completion in finished:
                        record(index, draw(index, completion))
            elif self.max_concurrency <= 1 or len(missing) <= 1:
                for index in missing:
                    record(index, draw(index))
            else:
                self._draw_concurrently(missing, draw, record)
        except EndpointError as error:
            # Counted after the pool has closed: calls still in flight when the
            # failure came have stored their samples by now.
            kept = (sum(1 for text, _ in store.get_samples(description, range(n)).values() if text.strip())
                    if store is not None else None)
            raise SamplingFailed(error.url, error.reason, kept, n) from error
        return [results[i] for i in range(n)]

    def sample_seeds(self, prompt: str, n: int, seeds, *, system: str | None = None,
                     temperature: float | None = None, max_tokens: int | None = None, store=None) -> list[list[str]]:
        """``n`` outputs for ``prompt`` under each user seed: ``[self.sample(prompt, n, seed=s, ...) for s in seeds]``.

        A batched backend generates the missing outputs of every seed together
        (one :meth:`complete_seeds` call: the prompt evaluated once, full
        forward steps), so many small requests to one prompt (the audits of a
        calibration run) cost about what one large request does.  The outputs,
        the store's rows and the errors are those of the loop.

        Parameters
        ----------
        prompt, n, system, temperature, max_tokens, store
            As in :meth:`sample`.
        seeds : sequence of int
            User seeds (≥ 0).

        Returns
        -------
        list of list of str
            Per seed, in the order of ``seeds``, the ``n`` texts :meth:`sample` returns.
        """
        seeds = [check_positive_int(s, "seeds", minimum=0) for s in seeds]
        if not self.batched or len(seeds) < 2:
            return [self.sample(prompt, n, system=system, temperature=temperature, max_tokens=max_tokens, seed=s,
                                store=store) for s in seeds]
        _check_request(prompt, system)
        n = check_positive_int(n, "n")
        temperature, max_tokens = self._settings(temperature, max_tokens)
        requests = []
        for seed in dict.fromkeys(seeds):
            stored = {} if store is None else store.get_samples(self.describe_request(
                prompt, system=system, temperature=temperature, max_tokens=max_tokens, seed=seed), range(n))
            requests += [(seed, i) for i in range(n) if not stored.get(i, ("",))[0].strip()]
        drawn: dict[int, dict[int, Completion]] = {seed: {} for seed in seeds}
        try:
            with closing(self.complete_seeds(prompt, requests, system=system, temperature=temperature,
                                             max_tokens=max_tokens)) as finished:
                for k, completion in finished:
                    seed, index = requests[k]
                    drawn[seed][index] = completion
        except EndpointError as error:  # nothing drawn here is stored yet
            kept = None if store is None else n * len(drawn) - len(requests)
            raise SamplingFailed(error.url, error.reason, kept, n * len(drawn)) from error
        # Each seed's replies then go through sample()'s checks and into the store, as its own draws would.
        return [[c.text for c in self.sample_completions(prompt, n, system=system, temperature=temperature,
                                                         max_tokens=max_tokens, seed=seed, store=store,
                                                         drawn=drawn[seed])] for seed in seeds]

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
        temperature = check_temperature(self.default_temperature if temperature is None else temperature)
        max_tokens = check_positive_int(self.default_max_tokens if max_tokens is None else max_tokens, "max_tokens")
        return temperature, max_tokens
