"""Exporting an audit's missing samples (or embeddings) as batch request lines.

:func:`export_requests` lists one request line per sample the store is
missing, exactly the request the live sampler would send for that slot
(:meth:`~dbpa_core.samplers.openai_compatible.OpenAISampler.chat_request`:
same messages, temperature, max_tokens, per-sample seed; the arms and seeds
of :meth:`~dbpa_core.audit.request.AuditRequest.arm_requests`), and
registers each line's ``custom_id`` in the store; :func:`write_requests`
writes them, split per model and at most :data:`MAX_LINES` per file.

Input line, the OpenAI "request input object":
``{"custom_id": str, "method": "POST", "url": "/v1/chat/completions", "body": {...}}``
where ``body`` is the endpoint's request body; ``custom_id`` is unique in a
file.  OpenAI accepts one model and one endpoint per file and at most 50 000
requests per file (OpenAI API reference, "Batch: the request input object"
and "Create batch", platform.openai.com/docs/api-reference/batch).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..._validation import check_positive_int
from ...data.files import write_texts
from ...data.store import request_key, text_hash
from ..costs import CostEstimate, estimate_cost, estimate_tokens, prices
from ..runner import build_embedder, build_sampler
from .ids import KEY_DIGITS, embedding_custom_id, sample_custom_id

CHAT_URL = "/v1/chat/completions"
EMBEDDINGS_URL = "/v1/embeddings"
#: OpenAI's limit of requests in one batch input file.
MAX_LINES = 50_000


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
    command : str
        The command that runs the SPEC from the store (``audit``, or ``compare`` for a compare SPEC).
    """

    kind: str
    requests: tuple[BatchRequest, ...]
    n_needed: int
    n_stored: int
    n_local: int = 0
    n_waiting: int = 0
    estimates: tuple[tuple[str, CostEstimate], ...] = ()
    command: str = "audit"


def describing(config, build):
    """An OpenAI-compatible backend built only to describe requests.

    It never calls the endpoint, so it needs no key: a placeholder stands in
    (keys are never part of a request's description or body).
    """
    from ...samplers.endpoint_calls import NO_KEY

    return build(config, api_key=NO_KEY)


def spec_arms(spec) -> list[tuple[object | None, object, dict | None]]:
    """(sampler or None, ArmRequest, description or None) of each arm of the SPEC's request; sampler and
    description are None for arms drawn by a backend that runs on this machine."""
    samplers, planned = {}, []
    for arm in spec.request.arm_requests():
        if arm.sampler.backend != "openai":
            planned.append((None, arm, None))
            continue
        if arm.sampler.instance not in samplers:
            samplers[arm.sampler.instance] = describing(arm.sampler.instance, build_sampler)
        sampler = samplers[arm.sampler.instance]
        planned.append((sampler, arm, sampler.describe_request(arm.prompt, system=arm.system or None,
                                                               temperature=arm.temperature,
                                                               max_tokens=arm.max_tokens, seed=arm.seed)))
    return planned


def spec_request_keys(spec) -> dict[str, dict]:
    """Request-key prefix → description, for every batchable arm of the SPEC."""
    return {request_key(description)[:KEY_DIGITS]: description
            for _, _, description in spec_arms(spec) if description is not None}


def spec_request_ks(spec) -> dict[str, int]:
    """Request-key prefix → samples of that request (the largest k of the arms that send it)."""
    ks: dict[str, int] = {}
    for _, arm, description in spec_arms(spec):
        if description is not None:
            key = request_key(description)[:KEY_DIGITS]
            ks[key] = max(ks.get(key, 0), arm_k(spec, arm))
    return ks


def export_requests(spec, *, store, embeddings: bool = False) -> BatchExport:
    """The batch requests a SPEC still needs, registered in ``store``.

    Parameters
    ----------
    spec : AuditSpec or CompareBatchSpec
        A validated SPEC (:func:`dbpa_core.audit.spec.load_spec`, or a compare
        SPEC through :func:`dbpa_core.requests.many_batch.batch_spec`, whose
        arms carry their own ``k``).  Its arms drawn by the ``openai`` backend
        (OpenAI, vLLM, any OpenAI-compatible server) are exported; arms of
        other backends are left to ``audit`` (``compare``).
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
    planned = spec_arms(spec)
    if all(sampler is None for sampler, _, _ in planned):
        raise ValueError(f"`sampler.backend` is {spec.sampler['backend']!r}: batch files are for the `openai` "
                         "backend (OpenAI, vLLM, any OpenAI-compatible server). Other backends run on this "
                         f"machine: run `python -m dbpa_core {spec_command(spec)} SPEC.yaml` instead.")
    requests, registry, needed, stored, local, listed = [], [], 0, 0, 0, set()
    for sampler, arm, description in planned:
        k = arm_k(spec, arm)
        if sampler is None:
            local += k
            continue
        present = stored_samples(store, description, range(k))
        for index in range(k):
            # Two arms of one request (one prompt listed twice) share its slots: each is counted and listed
            # once (a custom_id is unique in a file).
            if sample_custom_id(description, index) in listed:
                continue
            listed.add(sample_custom_id(description, index))
            needed, stored = needed + 1, stored + (index in present)
            if index in present:
                continue
            body = sampler.chat_request(arm.prompt, system=arm.system or None,
                                        temperature=description["temperature"],
                                        max_tokens=description["max_tokens"], seed=arm.seed, index=index)
            requests.append(BatchRequest(sample_custom_id(description, index), CHAT_URL, body,
                                         description["base_url"]))
            registry.append((requests[-1].custom_id, "sample", description, index))
    store.register_batch_requests(registry)
    embedder_model = (describing(spec.request.embedder, build_embedder).embeddings_request([])["model"]
                      if spec.embedder.get("name") == "openai" else spec.embedder.get("name", "minilm"))
    estimates = []
    for (endpoint, model), group in _grouped(requests).items():
        estimates.append((f"{model} ({endpoint})", estimate_cost(
            [_prompt_text(r.body) for r in group], 1, max_tokens=max(r.body["max_tokens"] for r in group),
            sampler_model=model, embedder_model=embedder_model, batch=True)))
    return BatchExport("samples", tuple(requests), needed, stored, local, 0, tuple(estimates), spec_command(spec))


def arm_k(spec, arm) -> int:
    """Samples of one arm: its own ``k`` (a compare SPEC's per-prompt k), else the SPEC's."""
    return getattr(arm, "k", spec.k)


def spec_command(spec) -> str:
    """The command that runs the SPEC once its samples are stored (``audit``, or ``compare``)."""
    return getattr(spec, "command", "audit")


def stored_samples(store, description: dict, indices) -> dict[int, tuple[str, list | None]]:
    """The stored samples of a request, without empty ones (an older version's; a live run draws them again)."""
    return {index: sample for index, sample in store.get_samples(description, indices).items() if sample[0].strip()}


def _prompt_text(body: dict) -> str:
    return "\n".join(message["content"] for message in body["messages"])


def _export_embeddings(spec, store) -> BatchExport:
    if spec.embedder.get("name", "minilm") != "openai":
        raise ValueError(f"`embedder.name` is {spec.embedder.get('name', 'minilm')!r}: it runs on this machine, "
                         f"there are no embedding requests to export; `{spec_command(spec)}` embeds the stored "
                         "samples itself.")
    embedder = describing(spec.request.embedder, build_embedder)
    size = check_positive_int(embedder.batch_size, "embedder.batch_size")
    endpoint = embedder.base_url or "api.openai.com"
    # Lines are grouped as the live run groups its calls (arm by arm, texts not yet embedded, in
    # chunks of batch_size): some servers' vectors depend on which texts share a call (llama.cpp's
    # server does), and the batch path must reproduce the live one.  So only complete arms go out.
    requests, texts, todo, waiting = [], [], {}, 0
    for sampler, arm, description in spec_arms(spec):
        if sampler is None:  # a local backend's arm: its samples are stored under that backend's key
            sampler = build_sampler(arm.sampler.instance)
            description = sampler.describe_request(arm.prompt, system=arm.system or None,
                                                   temperature=arm.temperature, max_tokens=arm.max_tokens,
                                                   seed=arm.seed)
        k = arm_k(spec, arm)
        present = stored_samples(store, description, range(k))
        if len(present) < k:
            waiting += k - len(present)
            continue
        arm_texts = [present[index][0] for index in range(k)]
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
    max_lines = check_positive_int(max_lines, "max_lines", maximum=MAX_LINES,
                                   why="OpenAI's limit of requests in one batch file")
    path = Path(path)
    chunks = [group[start : start + max_lines] for group in _grouped(export.requests).values()
              for start in range(0, len(group), max_lines)]
    if not chunks:
        return {}
    paths = [path] if len(chunks) == 1 else [path.with_name(f"{path.stem}-{n:03d}{path.suffix}")
                                             for n in range(1, len(chunks) + 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    # All files or none: a full disk midway leaves no half-written requests file to submit.
    write_texts({target: "".join(request.to_json() + "\n" for request in chunk)
                 for target, chunk in zip(paths, chunks)})
    return dict(zip(paths, chunks))
