"""``dbpa compare SPEC.yaml``: one change across many prompts, sampled now instead of read from a log.

The SPEC keeps the audit SPEC's conventions (:mod:`dbpa_core.audit.spec`): ``sampler`` draws the original
arm and ``perturbed_sampler`` (default: the same) the perturbed one, each a mapping with a ``backend``
(simulated, recorded, local, openai) validated by the audit SPEC's own rules; keys never go in it.
Example (``dbpa_core/assets/examples/compare_simulated.yaml`` runs offline)::

    name: concise-system-prompt
    sampler: {backend: simulated, temperature: 1.0}
    system: ""                              # the original arm's system prompt
    perturbed_system: "Answer in one line." # a system-prompt change (or a perturbed_sampler: a model change)
    arms: [original, one-line]              # names (default: original, perturbed)
    prompts:                                # a list, or a file beside the SPEC (.txt: one a line; .jsonl; .yaml)
      - "What causes the seasons?"
      - {id: tides, prompt: "Why are there two tides a day?", k: 8}   # per-prompt k
    k: 5                                    # outputs per prompt and arm (default 5)
    discrepancy: energy                     # and similarity, n_resamples, alpha, fdr, seed

Every output is drawn through the samplers' store path (as the audit's arms are) into the sample
store as it arrives (sample i of an arm is the sampler's i-th draw with the arm's seed, ``seed`` for the
original arm and ``seed + 1`` for the perturbed one, as in ``dbpa audit``), so an interrupted run resumes
and a second run samples nothing; the outputs then go through the same test as a log
(:func:`dbpa_core.audit.compare.compare_log`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .._validation import MAX_SAMPLES, SAMPLES_WHY, check_prompt_text, check_positive_int, check_probability
from ..audit.spec import SpecError

__all__ = ["CompareSpec", "compare_spec_result", "load_compare_spec", "parse_compare_spec", "run_compare_spec"]

_TOP = {"name", "sampler", "perturbed_sampler", "embedder", "system", "perturbed_system", "arms", "prompts", "k",
        "similarity", "discrepancy", "n_resamples", "alpha", "fdr", "seed"}
_PROMPT = {"id", "prompt", "system", "k"}
#: Most prompts one SPEC may hold, and most outputs in all (both arms): every output is kept in memory with
#: its vector (≈ 3 KB) and the test re-splits each prompt B times.
MAX_PROMPTS = 2_000
MAX_OUTPUTS = 100_000
DEFAULT_K = 5


@dataclass(frozen=True)
class SpecPrompt:
    prompt_id: str
    prompt: str
    system: str | None   # None: the arm's system prompt
    k: int


@dataclass(frozen=True)
class CompareSpec:
    """A validated compare SPEC (see the module)."""

    path: str
    name: str
    samplers: tuple[dict, dict]
    systems: tuple[str, str]
    arms: tuple[str, str]
    prompts: tuple[SpecPrompt, ...]
    embedder: dict
    similarity: str
    discrepancy: str
    n_resamples: int
    alpha: float
    fdr: float
    seed: int
    source: dict = field(repr=False, default_factory=dict)


def _fail(key: str, message: str):
    raise SpecError(f"`{key}` {message}", key)


def _checked(check, value, key, *args, **kwargs):
    try:
        return check(value, key, *args, **kwargs)
    except ValueError as error:
        raise SpecError(getattr(error, "without_value", None) or str(error), key) from None


def _text(value, key: str, *, prompt: bool = False) -> str:
    if not isinstance(value, str):
        _fail(key, f"must be a text (quote it if needed), not a {type(value).__name__}.")
    return _checked(check_prompt_text, value, key) if prompt else value


def _prompt_rows(value, folder: Path) -> list:
    """The ``prompts`` list, or the rows of the file it names (relative to the SPEC's folder)."""
    if isinstance(value, list):
        return value
    if not isinstance(value, str) or not value.strip():
        _fail("prompts", "must be a list of prompts or the name of a file of them (.txt, .jsonl, .yaml).")
    path = Path(value) if Path(value).is_absolute() else folder / value
    if not path.is_file():
        _fail("prompts", f"names no file: {path.name} is not beside the SPEC; give a list or a .txt/.jsonl/.yaml "
                         "file of prompts.")
    if path.suffix == ".txt":
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix == ".jsonl":
        import json

        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    _fail("prompts", f"{path.name}, line {number}: is not JSON; write one JSON object a line.")
                if isinstance(row, dict):  # a log of outputs (the JSONL importer's rows) also works: its prompts
                    row = {"id": row.get("id", row.get("prompt_id")), "prompt": row.get("prompt"),
                           **{key: row[key] for key in ("system", "k") if key in row}}
                rows.append(row)
        return rows
    if path.suffix in (".yaml", ".yml"):
        from ..data.assets import read_yaml

        rows = read_yaml(path, SpecError)
        if not isinstance(rows, list):
            _fail("prompts", f"{path.name} must hold a YAML list of prompts.")
        return rows
    _fail("prompts", f"{path.name}: a file of prompts must be .txt (one a line), .jsonl or .yaml.")


def _prompts(value, folder: Path, k_default: int) -> tuple[SpecPrompt, ...]:
    rows = _prompt_rows(value, folder)
    if not rows:
        _fail("prompts", "holds no prompt; list at least one.")
    found: dict[str, SpecPrompt] = {}
    for i, row in enumerate(rows):
        key = f"prompts[{i}]"
        if isinstance(row, str):
            row = {"prompt": row}
        if not isinstance(row, dict):
            _fail(key, "must be a text or a mapping with `prompt` (and optional id, system, k).")
        for name in row:
            if name not in _PROMPT:
                _fail(f"{key}.{name}", f"is not a known key; allowed: {', '.join(sorted(_PROMPT))}.")
        prompt = _text(row.get("prompt"), f"{key}.prompt", prompt=True)
        prompt_id = str(row.get("id") or f"prompt-{i + 1}")
        k = _checked(check_positive_int, row.get("k", k_default), f"{key}.k", minimum=2, maximum=MAX_SAMPLES,
                     why=SAMPLES_WHY)
        system = None if row.get("system") is None else _text(row["system"], f"{key}.system", prompt=True)
        if prompt_id in found:
            if found[prompt_id].prompt == prompt:  # the same prompt listed again (a log of outputs): once
                continue
            _fail(f"{key}.id", f"repeats the id {prompt_id!r} of another prompt; give each prompt its own id.")
        found[prompt_id] = SpecPrompt(prompt_id, prompt, system, k)
    if len(found) > MAX_PROMPTS:
        _fail("prompts", f"holds {len(found):,} prompts; at most {MAX_PROMPTS:,} per SPEC (split it).")
    if 2 * sum(p.k for p in found.values()) > MAX_OUTPUTS:
        _fail("k", f"asks for more than {MAX_OUTPUTS:,} outputs in all; lower k or split the prompts.")
    return tuple(found.values())


def parse_compare_spec(data, *, path: str | Path = "SPEC.yaml") -> CompareSpec:
    """Validate a compare SPEC mapping (as read from YAML); ``path`` locates a ``prompts`` file."""
    from ..audit.compare import COMPARE_DISCREPANCY, EMBEDDERS
    from ..audit.spec import parse_spec

    path = Path(path)
    if not isinstance(data, dict):
        raise SpecError("the SPEC must be a YAML mapping with `sampler` and `prompts`.")
    for name in data:
        if name not in _TOP:
            _fail(name, f"is not a key of a compare SPEC; allowed: {', '.join(sorted(_TOP))}.")
    if "prompts" not in data:
        _fail("prompts", "is required: a list of prompts, or a file of them beside the SPEC.")
    # The samplers, the embedder and the test's settings go through the audit SPEC's own rules (same keys, same
    # messages): a one-prompt audit SPEC of them is validated and only its checked values are kept.
    audit = parse_spec({**{key: data[key] for key in ("sampler", "perturbed_sampler", "embedder", "similarity",
                                                      "n_resamples", "alpha", "seed") if key in data},
                        "discrepancy": data.get("discrepancy", COMPARE_DISCREPANCY),
                        "prompts": {"original": {"prompt": "a"}, "perturbations": [{"id": "b", "prompt": "b"}]},
                        "k": 2})
    if audit.embedder["name"] not in EMBEDDERS:
        _fail("embedder.name", f"must be one of {', '.join(EMBEDDERS)} in a compare SPEC.")
    systems = tuple(_text(data.get(key, ""), key, prompt=True) if data.get(key) else "" for key in
                    ("system", "perturbed_system"))
    if "perturbed_system" not in data:
        systems = (systems[0], systems[0])
    arms = data.get("arms", ["original", "perturbed"])
    if not isinstance(arms, list) or len(arms) != 2 or not all(isinstance(a, str) and a.strip() for a in arms) \
            or arms[0] == arms[1]:
        _fail("arms", "must name two different arms: [original, perturbed].")
    samplers = (audit.sampler, audit.perturbed_sampler or audit.sampler)
    if samplers[0] == samplers[1] and systems[0] == systems[1]:
        _fail("perturbed_sampler", "or `perturbed_system` must differ from the original arm's; as written both "
                                   "arms are the same request, so there is nothing to compare.")
    k = _checked(check_positive_int, data.get("k", DEFAULT_K), "k", minimum=2, maximum=MAX_SAMPLES, why=SAMPLES_WHY)
    return CompareSpec(
        path=str(path), name=str(data.get("name") or path.stem), samplers=samplers, systems=systems,
        arms=(arms[0], arms[1]), prompts=_prompts(data["prompts"], path.parent, k), embedder=audit.embedder,
        similarity=audit.similarity, discrepancy=audit.discrepancy, n_resamples=audit.n_resamples,
        alpha=audit.alpha, fdr=_checked(check_probability, data.get("fdr", 0.1), "fdr"), seed=audit.seed,
        source=dict(data))


def load_compare_spec(path: str | Path) -> CompareSpec:
    """Read and validate a compare SPEC; an error names the file, the key and its line (never its value)."""
    from ..data.assets import key_lines, read_yaml

    path = Path(path)
    data = read_yaml(path, SpecError)
    try:
        return parse_compare_spec(data, path=path)
    except SpecError as error:
        line = None
        if error.key:
            lines, key = key_lines(path), error.key
            while key and key not in lines:
                key = key.rpartition(".")[0] if "." in key else key.rpartition("[")[0]
            line = lines.get(key)
        raise SpecError(f"{path.name}{f', line {line}' if line else ''}: {error}", error.key) from None


def run_compare_spec(spec: CompareSpec, *, store=None, progress=None, sampler_for=None, embedder=None):
    """Sample every prompt's two arms (through the store: a rerun resumes) and test them across the prompts.

    Parameters
    ----------
    spec : CompareSpec
    store : SampleStore, optional
        Samples and vectors are read from it and written to it as they arrive.
    progress : callable(str), optional
        Told "sampling prompt i of m: <id>" before each prompt.
    sampler_for : callable(SamplerConfig) -> Sampler, optional
        Default :func:`dbpa_core.audit.runner.build_sampler` (a key from the environment).
    embedder : Embedder, optional

    Returns
    -------
    CompareResult
    """
    from ..audit.compare import SPEC_FORMAT, CompareRequest, compare_log
    from ..audit.request import EmbedderConfig, SamplerConfig, arm_seed
    from ..audit.runner import build_embedder, build_sampler
    from ..data.eval_logs import EvalLog, PromptSamples

    sampler_for = sampler_for or build_sampler
    configs = [SamplerConfig.from_mapping(s) for s in spec.samplers]
    built: dict = {}
    for config in configs:  # one sampler per backend instance: both arms of one local model share its weights
        if config.instance not in built:
            built[config.instance] = sampler_for(config.instance)
    samplers = [built[config.instance] for config in configs]
    embedder = embedder if embedder is not None else build_embedder(EmbedderConfig.from_mapping(spec.embedder))
    prompts = []
    for number, prompt in enumerate(spec.prompts, start=1):
        if progress is not None:
            progress(f"sampling prompt {number} of {len(spec.prompts)}: {prompt.prompt_id}")
        texts = {}
        for perturbed, (arm, sampler, config, system) in enumerate(zip(spec.arms, samplers, configs, spec.systems)):
            # The audit's sampling path: sample i is read from the store if there, else drawn and stored at once.
            system = prompt.system if prompt.system is not None else system
            texts[arm] = tuple(sampler.sample(prompt.prompt, prompt.k, system=system or None, store=store,
                                              temperature=config.temperature, max_tokens=config.max_tokens,
                                              seed=arm_seed(spec.seed, perturbed=bool(perturbed))))
        prompts.append(PromptSamples(prompt.prompt_id, prompt.prompt, texts))
    log = EvalLog(SPEC_FORMAT, spec.arms, tuple(prompts), 0, ())
    request = CompareRequest((spec.path,), SPEC_FORMAT, spec.arms, similarity=spec.similarity,
                             discrepancy=spec.discrepancy, n_resamples=spec.n_resamples, seed=spec.seed,
                             alpha=spec.alpha, fdr=spec.fdr, embedder=spec.embedder["name"])
    # Every output is embedded once, all prompts in one batch, the vectors cached in the store with the samples.
    return compare_log(log, request, store=store, embedder=embedder)


def compare_spec_result(args, store):
    """The command line's ``dbpa compare SPEC.yaml`` (``--from`` omitted or ``spec``): the SPEC run to a result.

    A file that is not a YAML SPEC without ``--from`` is refused with the fix (exit 2).  The SPEC's settings
    (ω, B, α, FDR, seed, arms) are its own, as ``dbpa audit SPEC`` takes its SPEC's.
    """
    import sys

    if len(args.files) != 1 or Path(args.files[0]).suffix not in (".yaml", ".yml"):
        raise ValueError("--from is required for an eval log (promptfoo, lm-eval, inspect or jsonl); "
                         "without it, give one compare SPEC (.yaml).")
    if args.arms:
        raise ValueError("--arms: a compare SPEC names its arms in `arms:`; drop --arms.")
    spec = load_compare_spec(args.files[0])
    args.discrepancy = spec.discrepancy  # the summary line names the SPEC's ω, not the flag's default
    return run_compare_spec(spec, store=store, progress=lambda line: print(line, file=sys.stderr))
