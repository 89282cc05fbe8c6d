"""OpenAI's Batch endpoints through the ``openai`` client: upload, create, poll, download.

Optional: with a key, the requests file can go to OpenAI's Batch API from
here (``client.files.create`` with purpose "batch", ``client.batches.create``,
``client.batches.retrieve``, ``client.files.content``: OpenAI API reference,
"Batch").  Export and import work without them, for vLLM's ``run_batch`` or
any other engine.  Every call goes through the samplers' deadline, retries
and error messages (:func:`dbpa_core.samplers.endpoint_calls.call_endpoint`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

API_TIMEOUT, API_RETRIES = 120.0, 5


def _call(client, path: str, request, *, expect: tuple[str, ...] = ("id",)):
    """One call to the Batch or Files endpoints, with the samplers' deadline, retries and error messages.

    The reply must carry the attributes ``expect`` (a Batch object: ``id`` and ``status``): a server
    without a Batch API that answers with a web page or another object is the server's fault, an
    :class:`~dbpa_core.samplers.EndpointError`, never a crash.
    """
    from ..._validation import redact_url
    from ...samplers import EndpointError
    from ...samplers.endpoint_calls import call_endpoint

    url = f"{redact_url(str(client.base_url)).rstrip('/')}/{path}"
    try:
        reply = call_endpoint(request, url=url, timeout=API_TIMEOUT, max_retries=API_RETRIES)
    except EndpointError as error:
        if "HTTP 404" in error.reason or "HTTP 405" in error.reason:
            raise EndpointError(url, "HTTP 404: this server has no Batch API (vLLM and llama.cpp servers do not "
                                     "serve /v1/batches). Run the requests file with the engine's own batch runner "
                                     "(vLLM: `python -m vllm.entrypoints.openai.run_batch`) instead.") from None
        raise
    if any(not isinstance(getattr(reply, name, None), str) for name in expect):
        raise EndpointError(url, f"the reply is not a Batch API object (no {' or '.join(f'`{n}`' for n in expect)}): "
                                 "this server has no Batch API, or `--base-url` is not the API root.")
    return reply


def batch_client(base_url: str | None = None):
    """An ``openai`` client for the Batch endpoints (key from ``OPENAI_API_KEY``; no retries of its own).

    Its replies are capped at :data:`~dbpa_core.samplers._http.MAX_FILE_BYTES` (a results file
    is a reply too), every other call's at the samplers' cap.
    """
    from ..._validation import check_base_url
    from ...samplers._http import MAX_FILE_BYTES
    from ...samplers.endpoint_calls import make_client

    return make_client(check_base_url(base_url, "base_url"), None, API_TIMEOUT, max_reply_bytes=MAX_FILE_BYTES)


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
                                                                  completion_window="24h"), expect=("id", "status"))


def batch_status(batch_id: str, *, client):
    """The batch ``batch_id`` (``openai.types.Batch``: its status, request counts and files)."""
    if not isinstance(batch_id, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]{1,200}", batch_id):
        raise ValueError("`BATCH_ID` must be the id `batch submit` printed (letters, digits, '_', '-', '.'); "
                         "check it.")
    return _call(client, f"batches/{batch_id}", lambda: client.batches.retrieve(batch_id), expect=("id", "status"))


def fetch_results(batch_id: str, path: str | Path, *, client):
    """Write a batch's output and error lines to one results file, ready for :func:`import_results`.

    Returns the batch and the number of lines written (None when the batch
    has no result yet: it is still validating or running).
    """
    job = batch_status(batch_id, client=client)
    files = [file_id for file_id in (job.output_file_id, job.error_file_id) if file_id]
    if job.status not in ("completed", "expired", "cancelled", "failed") or not files:
        return job, None
    from ...data.files import atomic_writer

    lines = 0
    with atomic_writer(path, "wb") as out:  # nothing half-written if a download fails midway
        for file_id in files:
            content = _call(client, f"files/{file_id}/content", lambda f=file_id: client.files.content(f),
                            expect=())
            data = content.read() if hasattr(content, "read") else bytes(content)
            if data and not data.endswith(b"\n"):
                data += b"\n"
            out.write(data)
            lines += sum(1 for line in data.splitlines() if line.strip())
    return job, lines
