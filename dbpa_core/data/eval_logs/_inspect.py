"""Inspect AI eval logs: ``.eval`` (a zip of ``header.json`` and ``samples/<id>_epoch_<n>.json``) or ``.json``.

A sample is one (``id``, ``epoch``): the prompt is its ``input`` (a text, or chat messages), the output
``output.completion`` (else the text of ``output.choices[0].message.content``).  A sample with an
``error`` is skipped and counted.  A log holds one model, so arms are logs: one file per arm (two runs,
two models, two system prompts).

Inspect 0.3.285 compresses ``.eval`` members with Zstandard; Python reads those only with the
``zstandard`` package (or Python ≥ 3.14).  Without it such a log is refused with the two ways out:
install ``zstandard``, or ``inspect log convert LOG --to json``.  Deflate-compressed ``.eval`` logs
(Inspect's earlier default) are read with the standard library.  Members are read at most
:data:`MAX_LOG_BYTES` in all, uncompressed (a small zip can unpack to gigabytes).
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

from ._rows import MAX_LOG_BYTES, Row, decode, output_text, parse_json, read_bytes, shown

FIX = "give the log Inspect wrote (.eval or .json), unedited"
ZSTD = 93  # the zip compression method of Zstandard (APPNOTE 4.4.5)


def _text(content) -> str | None:
    """A message's content as text: a string, or the ``text`` of its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)
    return None


def _prompt(value, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [_text(m.get("content")) for m in value if isinstance(m, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return "\n".join(texts)
    raise ValueError(f"{where}: `input` must be a text or a list of chat messages; {FIX}.")


def _sample(sample, where: str, arm: str) -> tuple[int, Row]:
    if not isinstance(sample, dict):
        raise ValueError(f"{where}: a sample must be an object; {FIX}.")
    sample_id, epoch = sample.get("id"), sample.get("epoch", 1)
    if isinstance(sample_id, bool) or not isinstance(sample_id, int | str):
        raise ValueError(f"{where}: `id` is missing or not a text or integer; {FIX}.")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise ValueError(f"{where}: `epoch` must be an integer; {FIX}.")
    where = f"{where} (sample {shown(sample_id, 30)}, epoch {epoch})"
    prompt = _prompt(sample.get("input"), where)
    if sample.get("error"):
        message = sample["error"].get("message") if isinstance(sample["error"], dict) else sample["error"]
        return epoch, Row(where, str(sample_id), prompt, arm, None, f"error: {shown(str(message).strip(), 80)}")
    output = sample.get("output")
    if not isinstance(output, dict):
        raise ValueError(f"{where}: `output` must be an object; {FIX}.")
    text = output.get("completion")
    if text is None:
        choices = output.get("choices")
        if not isinstance(choices, list):
            raise ValueError(f"{where}: `output.choices` must be a list; {FIX}.")
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        text = _text(message.get("content")) if isinstance(message, dict) else ("" if not choices else None)
        if text is None:
            raise ValueError(f"{where}: `output.choices[0].message.content` holds no text; {FIX}.")
    return epoch, Row(where, str(sample_id), prompt, arm, output_text(text, where, "output.completion"))


def _zstd_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, budget: int) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise ValueError(f"{path.name}: compressed with Zstandard (as recent Inspect versions write), which this Python reads only "
                         "with the `zstandard` package; `pip install zstandard`, or convert the log: "
                         f"`inspect log convert {path.name} --to json --output-dir DIR`.") from None
    handle = archive.fp
    handle.seek(info.header_offset)
    header = handle.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise ValueError(f"{path.name}: member {info.filename} is damaged; {FIX}.")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    handle.seek(info.header_offset + 30 + name_length + extra_length)
    raw = handle.read(info.compress_size)
    try:  # a stream read stops at the budget: a small member may unpack to gigabytes
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as reader:
            return reader.read(budget + 1)
    except zstandard.ZstdError as error:
        raise ValueError(f"{path.name}: member {info.filename} cannot be decompressed ({error}); {FIX}.") from None


def _eval_samples(path: Path) -> tuple[list[tuple[str, object]], dict]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise ValueError(f"{path.name}: not a readable .eval zip ({error}); {FIX} (a truncated copy?).") from None
    with archive:
        members = [i for i in archive.infolist() if i.filename.startswith("samples/") and i.filename.endswith(".json")]
        # header.json is written when the eval ends (with its status); _journal/start.json when it starts
        headers = sorted((i for i in archive.infolist() if i.filename in ("header.json", "_journal/start.json")),
                         key=lambda i: i.filename != "header.json")
        if not members:
            raise ValueError(f"{path.name}: no samples/ in the log (written with --no-log-samples, or still "
                             "running); run the eval with samples logged.")
        if sum(i.file_size for i in members) > MAX_LOG_BYTES:
            raise ValueError(f"{path.name}: its samples unpack to over {MAX_LOG_BYTES // 2**20} MB; split the run "
                             "into smaller logs.")
        found, budget, header = [], MAX_LOG_BYTES, {}
        for info in headers[:1] + members:
            where = f"{path.name}, {info.filename}"
            try:
                data = (_zstd_member(archive, info, path, budget) if info.compress_type == ZSTD
                        else archive.open(info).read(budget + 1))
            except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as error:
                raise ValueError(f"{where}: cannot be read ({error}); {FIX}.") from None
            budget -= len(data)
            if budget < 0:
                raise ValueError(f"{path.name}: its samples unpack to over {MAX_LOG_BYTES // 2**20} MB; split the run "
                                 "into smaller logs.")
            parsed = parse_json(decode(data, where), where, FIX + ".")
            if info in headers:
                header = parsed if isinstance(parsed, dict) else {}
            else:
                found.append((where, parsed))
    return found, header


def rows(path: Path, arm: str | None, arms: list[str] | None) -> tuple[list[Row], list[str]]:
    """The samples of one Inspect log (one arm: ``arm``, default the file stem)."""
    arm = arm if arm is not None else path.stem
    if path.suffix == ".eval":
        samples, header = _eval_samples(path)
    elif path.suffix == ".json":
        data = parse_json(decode(read_bytes(path), path.name), path.name, FIX + ".")
        listed = data.get("samples") if isinstance(data, dict) else None
        if not isinstance(listed, list) or not listed:
            raise ValueError(f"{path.name}: no `samples` list (a log written without samples, or not an Inspect "
                             f"log); {FIX}.")
        samples, header = [(f"{path.name}, samples[{i}]", s) for i, s in enumerate(listed)], data
    else:
        raise ValueError(f"{path.name}: an Inspect log ends in .eval or .json; {FIX}.")
    read = [_sample(sample, where, arm) for where, sample in samples]
    seen: dict[tuple[str, int], str] = {}
    for epoch, row in read:
        if (row.prompt_id, epoch) in seen:
            raise ValueError(f"{row.where}: appears twice (also {seen[(row.prompt_id, epoch)]}); {FIX}.")
        seen[(row.prompt_id, epoch)] = row.where
    # a .eval zip stores samples in completion order: read them by epoch, then in the dataset's order, so that
    # texts[i] is epoch i + 1 and two logs list their prompts alike
    about = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    listed = (about.get("dataset") or {}).get("sample_ids") if isinstance(about.get("dataset"), dict) else None
    order = {str(i): n for n, i in enumerate(listed)} if isinstance(listed, list) else {}
    read.sort(key=lambda item: (item[0], order.get(item[1].prompt_id, len(order)), item[1].prompt_id))
    notes = [f"{path.name}: arm {shown(arm, 40)!r} is model {shown(about.get('model'), 60)}, task "
             f"{shown(about.get('task'), 40)}."] if about.get("model") else []
    if header.get("status") not in (None, "success"):
        notes.append(f"{path.name}: the eval's status is {shown(header.get('status'), 20)!r}, not 'success': its "
                     "samples may be incomplete.")
    return [row for _, row in read], notes
