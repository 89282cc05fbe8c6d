"""Batch inference files: an audit's samples through OpenAI's Batch API or vLLM's ``run_batch``.

Sampling (paper §3, step 1: k outputs per arm, for the original and every
perturbed prompt) is an audit's whole cost: 100 perturbations × k = 200 × 2
arms is 40 000 generations.  Batch engines run such workloads offline:
OpenAI's Batch API at half price within 24 h, and vLLM's
``python -m vllm.entrypoints.openai.run_batch -i requests.jsonl -o results.jsonl``
on a GPU node or a Ray cluster.  This module lets an audit go through them:

1. :func:`export_requests` lists one request line per sample the store is
   missing, exactly the request the live sampler would send for that slot
   (:meth:`~dbpa_core.samplers.openai_compatible.OpenAISampler.chat_request`:
   same messages, temperature, max_tokens, per-sample seed), and registers
   each line's ``custom_id`` in the store; :func:`write_requests` writes them.
2. The engine runs the file.
3. :func:`import_results` stores every successful completion in its slot and
   reports every other line (error objects, null content, unknown or foreign
   ``custom_id``, duplicates, malformed JSON) without storing it.
4. ``python -m dbpa_core audit SPEC.yaml`` then finds every sample stored
   and makes no generation call.  Embeddings from an OpenAI-compatible
   embedder go the same way (``/v1/embeddings`` lines, ``embeddings=True``).

File formats relied on (one JSON object per line):

* Input line, the OpenAI "request input object":
  ``{"custom_id": str, "method": "POST", "url": "/v1/chat/completions", "body": {...}}``
  where ``body`` is the endpoint's request body; ``custom_id`` is unique in
  a file.  OpenAI accepts one model and one endpoint per file and at most
  50 000 requests per file (OpenAI API reference, "Batch: the request input
  object" and "Create batch", platform.openai.com/docs/api-reference/batch).
* Output line, the "request output object":
  ``{"id": str, "custom_id": str, "response": {"status_code": int, "request_id": str, "body": {...}} | null,
  "error": {"code": str, "message": str} | null}``; failed requests go to a
  separate error file in the same format (same reference, "The request
  output object").
* vLLM's runner reads and writes the same objects (``BatchRequestInput``,
  ``BatchResponseData``, ``BatchRequestOutput`` in
  ``vllm/entrypoints/openai/run_batch.py``; docs
  "Offline Inference with the OpenAI Batch file format").  It writes failures
  inline: ``response.status_code`` 400 with no body and ``error`` a string
  or an ``ErrorResponse`` object.

A sample's ``custom_id`` is ``dbpa-s-<first 40 hex digits of its request
key>-<index>`` (the store's slot, under the 64 characters some batch services
allow); an embedding line's is ``dbpa-e-<40 hex digits>`` of the embedder key
and its texts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_positive_int
from ..data.store import request_key, text_hash
from .costs import CostEstimate, estimate_cost, estimate_tokens, prices
from .runner import build_embedder, build_sampler, scenario_arm_requests, spec_generation_settings

CHAT_URL = "/v1/chat/completions"
EMBEDDINGS_URL = "/v1/embeddings"
#: OpenAI's limit of requests in one batch input file.
MAX_LINES = 50_000
_SAMPLE_PREFIX, _EMBEDDING_PREFIX = "dbpa-s-", "dbpa-e-"
_KEY_DIGITS = 40

#: Why a result line was not stored, in plain words (keys of BatchImport.counts).
FAILURE_REASONS = {
    "malformed": "not a valid result line (not JSON, truncated, or without `custom_id` and `response.body`)",
    "error": "the engine reported an error for the request (an error object, or an HTTP status other than 200)",
    "null_content": "the response has no text (`content` null or empty: never a sample) or no embedding",
    "unknown": "a `custom_id` this store never exported (a result for a request that was not exported here)",
    "other_spec": "a request of another SPEC than the one given with --spec",
    "duplicate": "a second result for a `custom_id` already imported from this file",
}


@dataclass(frozen=True)
class BatchRequest:
    """One line of a batch input file.

    Attributes
    ----------
    custom_id : str
        Names the store slot the result fills.
    url : str
        ``/v1/chat/completions`` or ``/v1/embeddings``.
    body : dict
        The request body, exactly as the live backend sends it.
    endpoint : str
        The SPEC's ``base_url`` (``api.openai.com`` when absent); a file holds
        the requests of one endpoint and one model.
    """

    custom_id: str
    url: str
    body: dict
    endpoint: str

    def to_json(self) -> str:
        return json.dumps({"custom_id": self.custom_id, "method": "POST", "url": self.url, "body": self.body},
                          ensure_ascii=False)

    @property
    def group(self) -> tuple[str, str]:
        return self.endpoint, self.body["model"]


@dataclass(frozen=True)
class BatchExport:
    """The requests an audit still needs.

    Attributes
    ----------
    kind : {"samples", "embeddings"}
    requests : tuple of BatchRequest
        One per missing sample (or per batch of texts to embed).
    n_needed : int
        Samples the SPEC's batchable arms need (for embeddings: distinct texts stored).
    n_stored : int
        Of those, already in the store (nothing is requested for them).
    n_local : int
        Samples of arms drawn by a backend that runs on this machine; ``audit`` draws those.
    n_waiting : int
        Embeddings only: samples not yet stored, whose texts cannot be embedded yet.
    estimates : tuple of (str, CostEstimate)
        Per model: the cost at OpenAI Batch API prices (``assets/pricing.yaml``).
    """

    kind: str
    requests: tuple[BatchRequest, ...]
    n_needed: int
    n_stored: int
    n_local: int = 0
    n_waiting: int = 0
    estimates: tuple[tuple[str, CostEstimate], ...] = ()

    def reading(self) -> str:
        """Plain sentences for the terminal."""
        noun = "samples" if self.kind == "samples" else "texts to embed"
        lines = [f"{self.n_stored:,} of {self.n_needed:,} {noun} are already stored; "
                 f"{len(self.requests):,} request lines cover the rest."]
        if self.n_local:
            lines.append(f"{self.n_local:,} samples come from a backend that runs on this machine; "
                         "`audit` draws them itself.")
        if self.n_waiting:
            lines.append(f"{self.n_waiting:,} samples are not stored yet, so their texts cannot be embedded: "
                         "export, run and import the samples first, then export the embeddings again.")
        for model, estimate in self.estimates:
            if self.kind == "samples":
                lines.append(f"{model} at Batch API prices: {estimate.reading()}")
            else:
                cost = ("an unknown price (no batch price in assets/pricing.yaml)" if estimate.embedding_cost is None
                        else f"${estimate.embedding_cost:,.4f}")
                lines.append(f"{model} at Batch API prices: ≈{estimate.embedding_tokens:,} tokens to embed "
                             f"in {estimate.calls:,} requests: {cost}.")
        return "\n".join(lines)


@dataclass(frozen=True)
class LineFailure:
    """A result line that was not stored: its line number, ``custom_id``, reason (a
    key of :data:`FAILURE_REASONS`) and the engine's or parser's message."""

    line: int
    custom_id: str | None
    reason: str
    message: str


@dataclass(frozen=True)
class BatchImport:
    """What an import stored and what it refused.

    Attributes
    ----------
    path : str
    n_lines : int
        Non-blank lines read.
    n_stored : int
        Samples or embeddings newly written.
    n_already_stored : int
        Results for slots that were already filled (a second import of the
        same file lands here); the stored value is kept.
    n_differing : int
        Of those, results whose text differs from the stored one.
    failures : tuple of LineFailure
    """

    path: str
    n_lines: int
    n_stored: int
    n_already_stored: int
    n_differing: int
    failures: tuple[LineFailure, ...]

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(failure.reason for failure in self.failures))

    @property
    def complete(self) -> bool:
        return not self.failures

    def reading(self) -> str:
        """Plain sentences for the terminal: counts, then each kind of failure with its first lines."""
        lines = [f"{Path(self.path).name}: {self.n_lines:,} lines read; {self.n_stored:,} results stored, "
                 f"{self.n_already_stored:,} were already stored (importing again is harmless), "
                 f"{len(self.failures):,} lines failed and stored nothing."]
        if self.n_differing:
            lines.append(f"{self.n_differing:,} results differ from the text already stored for their slot; "
                         "the stored text was kept.")
        for reason, count in self.counts.items():
            failures = [f for f in self.failures if f.reason == reason]
            where = ", ".join(str(f.line) for f in failures[:5]) + (", …" if count > 5 else "")
            lines.append(f"  {count:,} × {FAILURE_REASONS[reason]}: line{'s' if count > 1 else ''} {where}; "
                         f"first: {failures[0].message}")
        if self.failures:
            lines.append("Export again to get request lines for the samples still missing.")
        return "\n".join(lines)


def sample_custom_id(description: dict, index: int) -> str:
    """The ``custom_id`` of sample ``index`` of a request (see the module docstring)."""
    return f"{_SAMPLE_PREFIX}{request_key(description)[:_KEY_DIGITS]}-{int(index)}"


def embedding_custom_id(embedder_key: str, texts: list[str]) -> str:
    """The ``custom_id`` of one ``/v1/embeddings`` line: a digest of the embedder and its texts."""
    digest = hashlib.sha256("\n".join([embedder_key, *map(text_hash, texts)]).encode()).hexdigest()
    return f"{_EMBEDDING_PREFIX}{digest[:_KEY_DIGITS]}"


def _describing(config: dict, build):
    """A SPEC's OpenAI-compatible backend built only to describe requests.

    It never calls the endpoint, so it needs no key: a placeholder stands in
    (keys are never part of a request's description or body).
    """
    from ..samplers.openai_compatible import NO_KEY

    return build({**config, "api_key": NO_KEY})


def _spec_arms(spec) -> list[tuple[object | None, object, dict | None]]:
    """(sampler or None, ArmRequest, description or None) of each arm of the SPEC; sampler and
    description are None for arms drawn by a backend that runs on this machine."""
    chosen = [spec.scenario.perturbation(p) for p in spec.perturbation_ids]
    arms = scenario_arm_requests(spec.scenario, chosen, seed=spec.seed,
                                 system_perturbation=spec.perturbed_sampler is not None,
                                 **spec_generation_settings(spec))
    samplers = {}
    planned = []
    for arm in arms:
        config = spec.perturbed_sampler if arm.perturbed and spec.perturbed_sampler else spec.sampler
        if config["backend"] != "openai":
            planned.append((None, arm, None))
            continue
        role = "perturbed" if config is spec.perturbed_sampler else "original"
        if role not in samplers:
            samplers[role] = _describing(config, build_sampler)
        sampler = samplers[role]
        planned.append((sampler, arm, sampler.describe_request(arm.prompt, system=arm.system or None,
                                                               temperature=arm.temperature,
                                                               max_tokens=arm.max_tokens, seed=arm.seed)))
    return planned


def _spec_request_keys(spec) -> dict[str, dict]:
    """Request-key prefix → description, for every batchable arm of the SPEC."""
    return {request_key(description)[:_KEY_DIGITS]: description
            for _, _, description in _spec_arms(spec) if description is not None}


def export_requests(spec, *, store, embeddings: bool = False) -> BatchExport:
    """The batch requests a SPEC still needs, registered in ``store``.

    Parameters
    ----------
    spec : AuditSpec
        A validated SPEC (:func:`dbpa_core.audit.spec.load_spec`).  Its arms
        drawn by the ``openai`` backend (OpenAI, vLLM, any OpenAI-compatible
        server) are exported; arms of other backends are left to ``audit``.
    store : SampleStore
        Decides what is missing, and remembers each line's slot so that
        :func:`import_results` needs only the results file.
    embeddings : bool
        Export ``/v1/embeddings`` requests for the texts of every arm whose k
        samples are all stored and that have no stored embedding (the SPEC's
        embedder must be ``openai``), grouped into lines as the live run
        groups its calls, instead of chat-completion requests for the
        missing samples.

    Returns
    -------
    BatchExport
    """
    if embeddings:
        return _export_embeddings(spec, store)
    planned = _spec_arms(spec)
    if all(sampler is None for sampler, _, _ in planned):
        raise ValueError(f"`sampler.backend` is {spec.sampler['backend']!r}: batch files are for the `openai` "
                         "backend (OpenAI, vLLM, any OpenAI-compatible server). Other backends run on this "
                         "machine: run `python -m dbpa_core audit SPEC.yaml` instead.")
    requests, registry, needed, stored, local = [], [], 0, 0, 0
    for sampler, arm, description in planned:
        if sampler is None:
            local += spec.k
            continue
        present = _stored_samples(store, description, range(spec.k))
        needed, stored = needed + spec.k, stored + len(present)
        for index in range(spec.k):
            if index in present:
                continue
            body = sampler.chat_request(arm.prompt, system=arm.system or None,
                                        temperature=description["temperature"],
                                        max_tokens=description["max_tokens"], seed=arm.seed, index=index)
            requests.append(BatchRequest(sample_custom_id(description, index), CHAT_URL, body,
                                         description["base_url"]))
            registry.append((requests[-1].custom_id, "sample", description, index))
    store.register_batch_requests(registry)
    embedder_model = (_describing(spec.embedder, build_embedder).embeddings_request([])["model"]
                      if spec.embedder.get("name") == "openai" else spec.embedder.get("name", "minilm"))
    estimates = []
    for (endpoint, model), group in _grouped(requests).items():
        estimates.append((f"{model} ({endpoint})", estimate_cost(
            [_prompt_text(r.body) for r in group], 1, max_tokens=max(r.body["max_tokens"] for r in group),
            sampler_model=model, embedder_model=embedder_model, batch=True)))
    return BatchExport("samples", tuple(requests), needed, stored, local, 0, tuple(estimates))


def _stored_samples(store, description: dict, indices) -> dict[int, tuple[str, list | None]]:
    """The stored samples of a request, without empty ones (an older version's; a live run draws them again)."""
    return {index: sample for index, sample in store.get_samples(description, indices).items() if sample[0].strip()}


def _prompt_text(body: dict) -> str:
    return "\n".join(message["content"] for message in body["messages"])


def _export_embeddings(spec, store) -> BatchExport:
    if spec.embedder.get("name", "minilm") != "openai":
        raise ValueError(f"`embedder.name` is {spec.embedder.get('name', 'minilm')!r}: it runs on this machine, "
                         "there are no embedding requests to export; `audit` embeds the stored samples itself.")
    embedder = _describing(spec.embedder, build_embedder)
    size = check_positive_int(embedder.batch_size, "embedder.batch_size")
    endpoint = embedder.base_url or "api.openai.com"
    # Lines are grouped as the live run groups its calls (arm by arm, texts not yet embedded, in
    # chunks of batch_size): some servers' vectors depend on which texts share a call (llama.cpp's
    # server does), and the batch path must reproduce the live one.  So only complete arms go out.
    requests, texts, todo, waiting = [], [], {}, 0
    for sampler, arm, description in _spec_arms(spec):
        if sampler is None:  # a local backend's arm: its samples are stored under that backend's key
            sampler = build_sampler(spec.perturbed_sampler if arm.perturbed and spec.perturbed_sampler
                                    else spec.sampler)
            description = sampler.describe_request(arm.prompt, system=arm.system or None,
                                                   temperature=arm.temperature, max_tokens=arm.max_tokens,
                                                   seed=arm.seed)
        present = _stored_samples(store, description, range(spec.k))
        if len(present) < spec.k:
            waiting += spec.k - len(present)
            continue
        arm_texts = [present[index][0] for index in range(spec.k)]
        known = store.get_embeddings(embedder.key, arm_texts)
        new_texts = [t for t in dict.fromkeys(arm_texts) if text_hash(t) not in known and t not in todo]
        todo.update(dict.fromkeys(new_texts))
        texts += arm_texts
        requests += [BatchRequest(embedding_custom_id(embedder.key, chunk), EMBEDDINGS_URL,
                                  embedder.embeddings_request(chunk), endpoint)
                     for chunk in (new_texts[i : i + size] for i in range(0, len(new_texts), size))]
    distinct = set(texts)
    store.register_batch_requests([(r.custom_id, "embedding", embedder.key, r.body["input"]) for r in requests])
    model = embedder.embeddings_request([])["model"]
    tokens = sum(estimate_tokens(text) for text in todo)
    price = prices()["batch"]["embedding"].get(model)
    estimate = CostEstimate(len(requests), 0, 0, tokens, 0.0, None if price is None else tokens * price / 1e6)
    return BatchExport("embeddings", tuple(requests), len(distinct), len(distinct) - len(todo), 0, waiting,
                       ((f"{model} ({endpoint})", estimate),) if requests else ())


def _grouped(requests) -> dict[tuple[str, str], list[BatchRequest]]:
    groups = defaultdict(list)
    for request in requests:
        groups[request.group].append(request)
    return groups


def write_requests(export: BatchExport, path: str | Path, *, max_lines: int = MAX_LINES
                   ) -> dict[Path, list[BatchRequest]]:
    """Write the request lines as JSONL; returns each file written with its requests (none when
    nothing is missing).

    One file at ``path`` when the requests share one endpoint and model and
    number at most ``max_lines``; otherwise ``<stem>-001<suffix>``, … each of
    one model (OpenAI accepts one model per batch file).
    """
    max_lines = check_positive_int(max_lines, "max_lines")
    path = Path(path)
    chunks = [group[start : start + max_lines] for group in _grouped(export.requests).values()
              for start in range(0, len(group), max_lines)]
    if not chunks:
        return {}
    paths = [path] if len(chunks) == 1 else [path.with_name(f"{path.stem}-{n:03d}{path.suffix}")
                                             for n in range(1, len(chunks) + 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, chunk in zip(paths, chunks):
        target.write_text("".join(request.to_json() + "\n" for request in chunk), encoding="utf-8")
    return dict(zip(paths, chunks))


# ------------------------------------------------------------------ import
class _Refused(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


def _error_message(error) -> str:
    """The message of an output line's ``error`` (OpenAI object, vLLM string or ErrorResponse)."""
    if isinstance(error, dict):
        inner = error.get("error") if isinstance(error.get("error"), dict) else error
        code, message = inner.get("code") or inner.get("type"), inner.get("message")
        return f"{code}: {message}" if code and message else str(message or code or inner)
    return str(error)


def _response_body(record: dict) -> dict:
    """The response body of a successful output line; raises _Refused otherwise."""
    response = record.get("response")
    if record.get("error") is not None:
        raise _Refused("error", _error_message(record["error"]))
    if not isinstance(response, dict):
        raise _Refused("malformed", "`response` is missing and there is no `error`.")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        detail = _error_message(body["error"]) if isinstance(body, dict) and "error" in body else "no detail"
        raise _Refused("error", f"HTTP status {status} ({detail}).")
    if not isinstance(body, dict):
        raise _Refused("malformed", "`response.body` is missing.")
    return body


def _completion_text(body: dict) -> str:
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _Refused("malformed", "`response.body` has no `choices[0].message`; is this a chat-completions "
                                    "result?") from None
    if content is not None and not isinstance(content, str):
        raise _Refused("malformed", "`choices[0].message.content` is not a string.")
    if not (content or "").strip():
        # As in a live run (Sampler.sample): an empty reply (content filter, tool call) is not an output.
        raise _Refused("null_content", f"`choices[0].message.content` is {'null' if content is None else 'empty'} "
                                       f"(finish_reason {body['choices'][0].get('finish_reason')!r}).")
    return content


def _embedding_vectors(body: dict, n_texts: int) -> np.ndarray:
    from ..embedders.base import unit_rows
    from ..embedders.openai_compatible import response_vectors

    data = body.get("data")
    if not data:
        raise _Refused("null_content", "`response.body.data` holds no embedding.")
    try:
        vectors = response_vectors(data)
    except (KeyError, TypeError, ValueError):
        raise _Refused("malformed", "`response.body.data` is not a list of {index, embedding}.") from None
    if vectors.ndim != 2 or vectors.shape[0] != n_texts:
        raise _Refused("malformed", f"{vectors.shape[0] if vectors.ndim else 0} embeddings for {n_texts} texts.")
    try:
        return unit_rows(vectors, "the batch output")
    except RuntimeError as problem:
        raise _Refused("malformed", str(problem)) from None


def _read_lines(path: Path) -> list[tuple[int, dict | _Refused]]:
    if not path.is_file():
        raise ValueError(f"{path}: file not found; give the results file the batch engine wrote.")
    parsed = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as problem:
                parsed.append((number, _Refused("malformed", f"not valid JSON ({problem.msg}, column "
                                                             f"{problem.colno}; truncated?).")))
                continue
            if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
                parsed.append((number, _Refused("malformed", "not an object with a string `custom_id`.")))
            elif "body" in record and "response" not in record:
                parsed.append((number, _Refused("malformed", "a request line, not a result: import the file the "
                                                             "batch engine wrote, not the one `batch export` wrote.")))
            else:
                parsed.append((number, record))
    if not parsed:
        raise ValueError(f"{path}: the file is empty; give the results file the batch engine wrote.")
    return parsed


def import_results(path: str | Path, *, store, spec=None) -> BatchImport:
    """Store the successful results of a batch output file in their slots.

    Parameters
    ----------
    path : str or Path
        An OpenAI Batch API output (or error) file, or vLLM ``run_batch`` output.
    store : SampleStore
        Where the samples go; the ``custom_id`` of each line is looked up
        among the lines this store exported.
    spec : AuditSpec, optional
        Accept only results of this SPEC's requests (others are reported as
        ``other_spec``); its sample slots are recognised even in a store that
        did not export them.

    Returns
    -------
    BatchImport
        Counts and every refused line; nothing refused is stored.  Slots
        already filled keep their value, so importing twice is harmless.
    """
    path = Path(path)
    parsed = _read_lines(path)
    registered = store.batch_requests(record["custom_id"] for _, record in parsed if isinstance(record, dict))
    spec_keys = _spec_request_keys(spec) if spec is not None else None
    spec_embedder = _describing(spec.embedder, build_embedder).key \
        if spec is not None and spec.embedder.get("name") == "openai" else None
    failures, seen = [], set()
    samples: dict[str, list] = defaultdict(list)  # request key → [(description, index, text)]
    vectors: dict[str, list] = defaultdict(list)  # embedder key → [(texts, vectors)]
    for number, record in parsed:
        custom_id = record.get("custom_id") if isinstance(record, dict) else None
        try:
            if isinstance(record, _Refused):
                raise record
            if custom_id in seen:
                raise _Refused("duplicate", f"{custom_id!r} was already imported from an earlier line.")
            kind, target, item = _slot(custom_id, registered, spec_keys, spec_embedder)
            body = _response_body(record)
            if kind == "sample":
                text = _completion_text(body)
                samples[request_key(target)].append((target, item, text))
            else:
                rows = _embedding_vectors(body, len(item))
                vectors[target].append((item, rows))
            seen.add(custom_id)
        except _Refused as refused:
            failures.append(LineFailure(number, custom_id, refused.reason, refused.message))
    stored, already, differing = _store_samples(store, samples)
    for embedder_key, batches in vectors.items():
        new, old = _store_embeddings(store, embedder_key, batches)
        stored, already = stored + new, already + old
    return BatchImport(str(path), len(parsed), stored, already, differing, tuple(failures))


def _slot(custom_id: str, registered: dict, spec_keys: dict | None, spec_embedder: str | None):
    """(kind, target, item) of a ``custom_id``; raises _Refused when it names no slot of this store/SPEC."""
    if custom_id.startswith(_SAMPLE_PREFIX) and spec_keys is not None:
        key_prefix, _, index = custom_id[len(_SAMPLE_PREFIX):].rpartition("-")
        if key_prefix in spec_keys and index.isdigit():
            return "sample", spec_keys[key_prefix], int(index)
    if custom_id not in registered:
        raise _Refused("unknown", f"{custom_id!r} was never exported from this store"
                                  + (" and names no request of the SPEC." if spec_keys is not None else
                                     "; give --spec to import into another store."))
    kind, target, item = registered[custom_id]
    if spec_keys is not None and (target != spec_embedder if kind == "embedding"
                                  else request_key(target)[:_KEY_DIGITS] not in spec_keys):
        raise _Refused("other_spec", f"{custom_id!r} was exported for another SPEC (other prompts, model or "
                                     "settings); import it without --spec or with its own SPEC.")
    return kind, target, item


def _store_samples(store, samples: dict) -> tuple[int, int, int]:
    new_rows, already, differing = [], 0, 0
    for rows in samples.values():
        present = _stored_samples(store, rows[0][0], [index for _, index, _ in rows])
        for description, index, text in rows:
            if index in present:
                already += 1
                differing += present[index][0] != text
            else:
                new_rows.append((description, index, text))
    return store.put_samples(new_rows), already, differing


def _store_embeddings(store, embedder_key: str, batches: list) -> tuple[int, int]:
    texts = [text for chunk, _ in batches for text in chunk]
    rows = np.concatenate([chunk_vectors for _, chunk_vectors in batches])
    known = store.get_embeddings(embedder_key, texts)
    new = [i for i, text in enumerate(texts) if text_hash(text) not in known]
    if new:
        store.put_embeddings(embedder_key, [texts[i] for i in new], rows[new])
    return len(new), len(texts) - len(new)


# ------------------------------------------------- OpenAI's Batch endpoints
# Optional: with a key, the requests file can go to OpenAI's Batch API from
# here (files.create with purpose "batch", batches.create, batches.retrieve,
# files.content: OpenAI API reference, "Batch").  Export and import work
# without them, for vLLM's run_batch or any other engine.
API_TIMEOUT, API_RETRIES = 120.0, 5


def _call(client, path: str, request):
    """One call to the Batch or Files endpoints, with the samplers' deadline, retries and error messages."""
    from .._validation import redact_url
    from ..samplers.openai_compatible import call_endpoint

    url = f"{redact_url(str(client.base_url)).rstrip('/')}/{path}"
    return call_endpoint(request, url=url, timeout=API_TIMEOUT, max_retries=API_RETRIES)


def batch_client(base_url: str | None = None):
    """An ``openai`` client for the Batch endpoints (key from ``OPENAI_API_KEY``; no retries of its own)."""
    from .._validation import check_base_url
    from ..samplers.openai_compatible import make_client

    return make_client(check_base_url(base_url, "base_url"), None, API_TIMEOUT)
def submit_batch(path: str | Path, *, client):
    """Upload a requests file and create a batch for it (completion window 24 h).

    Parameters
    ----------
    path : str or Path
        A file written by :func:`write_requests` (one endpoint per file).
    client : openai.OpenAI

    Returns
    -------
    openai.types.Batch
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: file not found; give a requests file written by `batch export`.")
    with path.open(encoding="utf-8") as handle:
        first = handle.readline()
    try:
        endpoint = json.loads(first)["url"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"{path}: the first line is not a batch request line (`custom_id`, `method`, `url`, "
                         "`body`); give a requests file written by `batch export`.") from None
    content = path.read_bytes()
    upload = _call(client, "files", lambda: client.files.create(file=(path.name, content), purpose="batch"))
    return _call(client, "batches", lambda: client.batches.create(input_file_id=upload.id, endpoint=endpoint,
                                                                  completion_window="24h"))


def batch_status(batch_id: str, *, client):
    """The batch ``batch_id`` (``openai.types.Batch``: its status, request counts and files)."""
    return _call(client, f"batches/{batch_id}", lambda: client.batches.retrieve(batch_id))


def read_batch_status(job) -> str:
    """One plain sentence on a batch's progress."""
    counts = job.request_counts
    done = (f"{counts.completed:,} of {counts.total:,} requests done, {counts.failed:,} failed"
            if counts is not None else "no request counted yet")
    return f"Batch {job.id} is {job.status}: {done}."


def fetch_results(batch_id: str, path: str | Path, *, client):
    """Write a batch's output and error lines to one results file, ready for :func:`import_results`.

    Returns the batch and the number of lines written (None when the batch
    has no result yet: it is still validating or running).
    """
    job = batch_status(batch_id, client=client)
    files = [file_id for file_id in (job.output_file_id, job.error_file_id) if file_id]
    if job.status not in ("completed", "expired", "cancelled", "failed") or not files:
        return job, None
    text = "".join(_call(client, f"files/{file_id}/content", lambda f=file_id: client.files.content(f)).text
                   .rstrip("\n") + "\n" for file_id in files)
    Path(path).write_text(text, encoding="utf-8")
    return job, sum(1 for line in text.splitlines() if line.strip())
