"""Batch inference files: an audit's samples through OpenAI's Batch API or vLLM's ``run_batch``.

Sampling (paper §3, step 1: k outputs per arm, for the original and every
perturbed prompt) is an audit's whole cost: 100 perturbations × k = 200 × 2
arms is 40 000 generations.  Batch engines run such workloads offline:
OpenAI's Batch API at half price within 24 h, and vLLM's
``python -m vllm.entrypoints.openai.run_batch -i requests.jsonl -o results.jsonl``
on a GPU node or a Ray cluster.  This module lets an audit go through them:

1. :func:`export_requests` (:mod:`.export`) lists one request line per sample the store is
   missing, exactly the request the live sampler would send for that slot
   (:meth:`~dbpa_core.samplers.openai_compatible.OpenAISampler.chat_request`:
   same messages, temperature, max_tokens, per-sample seed), and registers
   each line's ``custom_id`` in the store; :func:`write_requests` writes them.
2. The engine runs the file.
3. :func:`import_results` (:mod:`.results`) stores every successful completion in its slot and
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

=========  ==============================================================
ids        the ``custom_id`` of a line: which store slot its result fills
export     the request lines an audit still needs, written as JSONL files
lines      one result line checked against what the export wrote (the validator)
results    importing an output file into the store, every failure listed
api        OpenAI's Batch endpoints through the ``openai`` client
=========  ==============================================================

The terminal's sentences about exports, imports and batches are in
:mod:`dbpa_core.present.batch`.
"""

from .api import batch_client, batch_status, fetch_results, submit_batch
from .export import CHAT_URL, EMBEDDINGS_URL, MAX_LINES, BatchExport, BatchRequest, export_requests, write_requests
from .ids import embedding_custom_id, sample_custom_id
from .lines import FAILURE_REASONS, MAX_LINE_BYTES, Accepted, Expected, LineFailure, validate_line
from .results import BatchImport, import_results

__all__ = ["CHAT_URL", "EMBEDDINGS_URL", "FAILURE_REASONS", "MAX_LINES", "MAX_LINE_BYTES", "Accepted", "BatchExport",
           "BatchImport", "BatchRequest", "Expected", "LineFailure", "batch_client", "batch_status",
           "embedding_custom_id", "export_requests", "fetch_results", "import_results", "sample_custom_id",
           "submit_batch", "validate_line", "write_requests"]
