"""Round three's attack set: 40 hostile inputs of the five classes, run against one checkout's code.

    python bench/attack_round_three.py [ROOT]        # ROOT: the checkout whose dbpa_core is attacked (default: .)

Each case runs in this process under a 20 s alarm (a FIFO that blocks, a ROUGE-L that never ends) and a cap of
2 GB more address space (a read of /dev/zero), in a fresh temporary folder; it is *handled* when the command ends as
the issue asks (exit 2 naming the field, nothing deleted or written, no secret and no raw escape printed).
Prints one line per case and the count per class.  Compare main's checkout with a branch's:
``python bench/attack_round_three.py /work/main`` then ``python bench/attack_round_three.py .``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import resource
import shutil
import signal
import sqlite3
import stat
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
sys.path.insert(0, str(ROOT))
SECRET = "sk-proj-T3stK3yAbcdEfghIjklMnopQrstUvwx9876"
os.environ["OPENAI_API_KEY"] = SECRET
os.environ.pop("DBPA_DEBUG", None)

from dbpa_core.__main__ import main  # noqa: E402


class Hung(BaseException):
    """Raised by the alarm; not an Exception, so that the command line's own handler does not catch it."""


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue() + err.getvalue()


def clean(text: str) -> bool:
    return (SECRET[-10:] not in text and SECRET[8:18] not in text and "\x1b" not in text and "\u202e" not in text
            and not any(line.startswith("FAKE") for line in text.splitlines()) and "Traceback" not in text)


def refused(result, *words) -> bool:
    code, text = result
    return code == 2 and clean(text) and all(word in text for word in words)


def tree(folder: Path) -> dict:
    return {str(p): "dir" if p.is_dir() and not p.is_symlink() else
            (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else oct(p.lstat().st_mode))
            for p in sorted(folder.rglob("*"))}


def spec(folder: Path, text: str | dict) -> Path:
    path = folder / "spec.yaml"
    path.write_text(text if isinstance(text, str) else json.dumps(text))
    return path


SIM = {"name": "t", "sampler": {"backend": "simulated"}, "scenario": "seasons_question", "perturbations": ["mars"],
       "k": 4, "n_resamples": 20, "seed": 0}


def prompts_spec(**item):
    return {"name": "t", "sampler": {"backend": "simulated"}, "k": 4, "n_resamples": 20,
            "prompts": {"original": {"prompt": "Why is the sky blue?"},
                        "perturbations": [{"id": "p1", "prompt": "Why is the sky blue, really?", **item}]}}


def jsonl(folder: Path, name: str, texts) -> Path:
    path = folder / name
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return path


def sqlite_file(path: Path, *statements: str) -> Path:
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()
    return path


def foreign_store(make):
    def case(d: Path):
        store = make(d / "other.db")
        before = tree(d)
        result = cli("audit", spec(d, SIM), "--store", store, "--out", d / "o")
        after = tree(d)
        after.pop(str(d / "spec.yaml"), None), before.pop(str(d / "spec.yaml"), None)
        return result[0] == 2 and after == before
    return case


def wal_only(path: Path) -> Path:
    source = path.parent / "w" / path.name
    source.parent.mkdir()
    connection = sqlite3.connect(source)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    connection.execute("CREATE TABLE samples (request_key TEXT, text TEXT)")
    connection.execute("INSERT INTO samples VALUES ('k', 'theirs')")
    connection.commit()
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{source}{suffix}", f"{path}{suffix}")
    connection.close()
    shutil.rmtree(source.parent)
    return path


def special_store(kind):
    def case(d: Path):
        path = d / "special"
        if kind == "fifo":
            os.mkfifo(path)
        else:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        result = cli("audit", spec(d, SIM), "--store", path, "--out", d / "o")
        return result[0] == 2 and path.exists() and not stat.S_ISREG(path.stat().st_mode)
    return case


def fifo_input(where):
    def case(d: Path):
        pipe = d / "pipe.jsonl"
        os.mkfifo(pipe)
        good = jsonl(d, "good.jsonl", ["a b", "b c", "c d"])
        if where == "test":
            return refused(cli("test", pipe, good))
        if where == "spec":
            return refused(cli("audit", pipe))
        return refused(cli("audit", spec(d, {**SIM, "sampler": {"backend": "recorded", "path": str(pipe)}}),
                           "--store", d / "s.sqlite"))
    return case


def secret_field(field, value):
    def case(d: Path):
        code, text = cli("audit", spec(d, prompts_spec(**{field: value})), "--store", d / "s.sqlite", "--out", d / "o")
        files = b"".join(p.read_bytes() for p in d.rglob("*") if p.is_file() and p.name != "spec.yaml")
        return code == 2 and clean(text) and value.encode() not in files and SECRET[-10:].encode() not in files
    return case


def escaped_label(d: Path):
    label = "\x1b]0;owned\x07\x1b[31m\u202eevil\nFAKE: imported 999, refused 0."
    code, text = cli("audit", spec(d, prompts_spec(label=label)), "--store", d / "s.sqlite", "--out", d / "o")
    return code == 0 and clean(text)


def escaped_file_name(d: Path):
    bad = jsonl(d, "a\x1b[31m\u202e.jsonl", ["x", "y", "z"])
    return refused(cli("test", bad, d / "missing.jsonl"))


def redact_form(form):
    def case(d: Path):
        from dbpa_core import _validation

        say = getattr(_validation, "shown", None) or _validation.redact
        text = say(f"server said {form(SECRET)}")
        compact = "".join(text.split())
        return all(SECRET[i:i + 10] not in compact for i in range(len(SECRET) - 10))
    return case


def stored_key(d: Path):
    from dbpa_core.data.store import SampleStore

    store = SampleStore(d / "s.sqlite")
    store.put_sample({"backend": "simulated", "prompt": "p"}, 0, f"the key is {SECRET}")
    return SECRET[-10:].encode() not in b"".join(p.read_bytes() for p in d.iterdir() if p.is_file())


def recorded_dev_zero(d: Path):
    return refused(cli("audit", spec(d, {**SIM, "sampler": {"backend": "recorded", "path": "/dev/zero"}}),
                       "--store", d / "s.sqlite"))


def rouge_budget(d: Path):
    long = " ".join(f"w{i % 5000}" for i in range(150_000))
    a = jsonl(d, "a.jsonl", [long, long + " x"])
    b = jsonl(d, "b.jsonl", [long + " y", long + " z"])
    return refused(cli("test", a, b, "--similarity", "rouge_l"))


def yaml_case(text, *words):
    return lambda d: refused(cli("audit", spec(d, text)), *words)


def csv_case(content: bytes, *words):
    def case(d: Path):
        path = d / "f.csv"
        path.write_bytes(content)
        good = jsonl(d, "good.jsonl", ["a b", "b c", "c d", "d e", "e f"])
        return refused(cli("test", path, good), *words)
    return case


def jsonl_separators(d: Path):
    path = d / "a.jsonl"
    path.write_text("".join(json.dumps({"text": f"x\u2028y\x85z {i}"}, ensure_ascii=False) + "\n" for i in range(3)))
    good = jsonl(d, "b.jsonl", ["a b", "b c", "c d"])
    return cli("test", path, good, "--similarity", "rouge_1")[0] == 0


def big_cell(d: Path):
    path = d / "a.csv"
    path.write_text("text\n" + "\n".join(f"w{i} " + "x" * 200_000 for i in range(3)) + "\n")
    good = jsonl(d, "b.jsonl", ["a b", "b c", "c d"])
    return cli("test", path, good, "--similarity", "rouge_1")[0] == 0


def typed(sampler, field):
    return lambda d: refused(cli("audit", spec(d, {**SIM, "sampler": sampler})), field)


def system_list(d: Path):
    item = prompts_spec(system=["a", "b"])
    return refused(cli("audit", spec(d, item)), "system")


def max_lines_zero(d: Path):
    path = spec(d, {**SIM, "sampler": {"backend": "openai", "model": "m"}})
    return refused(cli("batch", "export", path, "--out", d / "r.jsonl", "--max-lines", "0", "--store",
                       d / "s.sqlite"), "--max-lines")


def other_model(d: Path):
    path = spec(d, {**SIM, "sampler": {"backend": "openai", "model": "gpt-4o-mini"}, "k": 2})
    if cli("batch", "export", path, "--out", d / "r.jsonl", "--store", d / "s.sqlite")[0] != 0:
        return False
    lines = [json.loads(line) for line in (d / "r.jsonl").read_text().splitlines()]
    (d / "out.jsonl").write_text("".join(json.dumps({"custom_id": line["custom_id"], "response": {
        "status_code": 200, "body": {"model": "gpt-4o", "choices": [{"message": {"content": "hi"}}]}}}) + "\n"
        for line in lines))
    code, text = cli("batch", "import", d / "out.jsonl", "--spec", path, "--store", d / "s.sqlite")
    return code == 2 and "imported 0" in text


def bool_embedding(d: Path):
    path = d / "a.jsonl"
    path.write_text("".join(json.dumps({"embedding": [True, 0.5]}) + "\n" for _ in range(3)))
    from dbpa_core.embedders.openai_compatible import response_vectors

    try:
        response_vectors([{"index": 0, "embedding": [True, 0.5]}])
        return False
    except ValueError:
        return True


def flag(argv, name):
    def case(d: Path):
        a = jsonl(d, "a.jsonl", ["the cat sat", "the cat ran", "a dog sat"])
        b = jsonl(d, "b.jsonl", ["a dog ran", "the dog ran far", "cats sat"])
        return refused(cli("test", a, b, "--similarity", "rouge_1", *argv), name)
    return case


def tiny_alpha(d: Path):
    a = jsonl(d, "a.jsonl", ["the cat sat", "the cat ran", "a dog sat"])
    b = jsonl(d, "b.jsonl", ["a dog ran", "the dog ran far", "cats sat"])
    code, text = cli("test", a, b, "--similarity", "rouge_1", "--alpha", "5e-324")
    return code in (0, 2) and "unexpected" not in text


def api_value_error(call, name):
    def case(d: Path):
        try:
            call()
        except ValueError as error:
            return f"`{name}`" in str(error)
        except Exception:  # noqa: BLE001 - an uncontrolled error is the failure counted
            return False
        return False
    return case


def fetch_to_folder(d: Path):
    return refused(cli("batch", "fetch", "batch_abc", "--out", d, "--base-url", "http://127.0.0.1:9/v1"), "--out")


def key_newline(d: Path):
    os.environ["OPENAI_API_KEY"] = SECRET + "\n"
    try:
        return refused(cli("batch", "status", "batch_abc", "--base-url", "http://127.0.0.1:9/v1"), "newline")
    finally:
        os.environ["OPENAI_API_KEY"] = SECRET


def _required(effect, **kw):
    from dbpa_core import required_sample_size

    return required_sample_size(effect, **kw)


CASES = {
    "ownership": {
        "store: a character device": special_store("device"),
        "store: a FIFO": special_store("fifo"),
        "store: only a VIEW": foreign_store(lambda p: sqlite_file(p, "CREATE VIEW v AS SELECT 1 AS x")),
        "store: samples(request_key, text)": foreign_store(
            lambda p: sqlite_file(p, "CREATE TABLE samples (request_key TEXT, text TEXT)")),
        "store: a requests table with rows": foreign_store(lambda p: sqlite_file(
            p, "CREATE TABLE requests (request_key TEXT PRIMARY KEY, description TEXT NOT NULL)",
            "INSERT INTO requests VALUES ('x', 'theirs')")),
        "store: tables only in its -wal": foreign_store(wal_only),
    },
    "output path": {
        "key in a label": secret_field("label", SECRET),
        "key in an id": secret_field("id", "sk-" + "A1b2C3d4" * 4),
        "URL password in a label": secret_field("label", "http://me:pa55word@host"),
        "key in a prompt": secret_field("prompt", f"use {SECRET}"),
        "ANSI/OSC/newline in a label": escaped_label,
        "ANSI/bidi in a file name": escaped_file_name,
        "key without its sk- prefix": redact_form(lambda k: k[8:]),
        "key spaced out": redact_form(lambda k: " ".join(k)),
        "key cut short": redact_form(lambda k: k[:24]),
        "a completion quoting the key": stored_key,
    },
    "type before open": {
        "FIFO as test input": fifo_input("test"),
        "FIFO as the SPEC": fifo_input("spec"),
        "FIFO as a recorded path": fifo_input("recorded"),
        "/dev/zero as a recorded path": recorded_dev_zero,
        "/dev/zero as test input": lambda d: refused(cli("test", "/dev/zero", jsonl(d, "g.jsonl", "abc"))),
        "ROUGE-L on 2 + 2 texts of 900 kB": rouge_budget,
    },
    "strict parsing": {
        "duplicate YAML key": yaml_case("name: t\nscenario: seasons_question\nalpha: 0.05\nalpha: 0.5\n", "alpha"),
        "duplicate nested key": yaml_case("sampler:\n  backend: simulated\n  backend: openai\n", "backend"),
        "YAML key 1: 2": yaml_case("name: t\n1: 2\n", "line 2"),
        "CSV with an unclosed quote": csv_case(b'text\none\n"two\nthree\nfour\nfive\nsix\n', "row 3"),
        "CR-only CSV": csv_case(b"text\rone\rtwo\rthree\r", "row 1"),
        "mixed newlines CSV": csv_case(b"text\r\none\ntwo\nthree\n", "row"),
        "JSONL with U+2028 and U+0085": jsonl_separators,
        "a 200 kB CSV cell": big_cell,
        "logprobs: 'no'": typed({"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                                 "logprobs": "no"}, "logprobs"),
        "system: [a, b]": system_list,
        "--max-lines 0": max_lines_zero,
        "batch results of another model": other_model,
        "booleans as embedding values": bool_embedding,
    },
    "exit codes": {
        "--seed -1 names --seed": flag(["--seed", "-1"], "--seed"),
        "--alpha 5e-324": tiny_alpha,
        "required_sample_size(1e-200)": api_value_error(lambda: _required(1e-200), "effect"),
        "required_sample_size(alpha=5e-324)": api_value_error(lambda: _required(0.5, alpha=5e-324), "alpha"),
        "batch fetch --out a folder": fetch_to_folder,
        "a key with a trailing newline": key_newline,
    },
}


def run(case) -> str:
    folder = Path(tempfile.mkdtemp(prefix="attack-"))
    cwd = os.getcwd()
    os.chdir(folder)
    os.environ["DBPA_STORE"] = str(folder / "default" / "store.sqlite")
    signal.alarm(20)
    # at most 2 GB more address space than the process holds now (a loaded model already maps several GB)
    held = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmSize"))) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (held + 2 * 2**30, resource.RLIM_INFINITY))
    try:
        return "handled" if case(folder) else "NOT handled"
    except Hung:
        return "NOT handled (hung: stopped after 20 s)"
    except MemoryError:
        return "NOT handled (read without bound: hit the 2 GB cap)"
    except Exception as error:  # noqa: BLE001 - an escaping exception is a case not handled
        return f"NOT handled ({type(error).__name__}: {str(error)[:80]!r})"
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        os.chdir(cwd)
        shutil.rmtree(folder, ignore_errors=True)


def alarm(*_):
    raise Hung()


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, alarm)
    from dbpa_core.embedders import get_embedder

    get_embedder("minilm").embed(["warm-up"])  # the model is loaded once, outside the cases' 20 s
    totals = Counter()
    print(f"attacking {ROOT}")
    for name, cases in CASES.items():
        for label, case in cases.items():
            outcome = run(case)
            totals[name, outcome == "handled"] += 1
            print(f"  {name:16} {label:40} {outcome}", flush=True)
    handled = sum(n for (_, ok), n in totals.items() if ok)
    print("\n".join(f"{name}: {totals[name, True]} of {totals[name, True] + totals[name, False]}" for name in CASES))
    print(f"total: {handled} of {sum(totals.values())} handled")
