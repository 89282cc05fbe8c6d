"""The DBPA paper's own LLM responses, shipped in ``assets/paper/`` (Apache-2.0, see its NOTICE).

Rauba, Wei & van der Schaar, "Quantifying perturbation impacts for large
language models" (ICML 2025) ran its case studies with the reference code
QiyaoWei/Hypo-Test (commit c586dfe, ``exps/SFLLM/``).  Its response files are
shipped unmodified as xz-compressed tar archives; this module reads them and
knows their quirks:

* **Echoed prompts.**  The open (Hugging Face) models' outputs begin with the
  prompt they were given (the text-generation pipeline returns prompt +
  continuation).  :func:`strip_echo` removes exactly that prompt and refuses
  an output that does not start with it, so a paraphrase can never reach the
  embedding through its echo.  The API models (GPT-3.5, GPT-4) do not echo.
* **Which patient.**  In ``paraphrases/`` the ``base`` arm answers a prompt
  about a randomly drawn patient (one per seed), while keys ``0``–``7`` are
  eight paraphrases (:data:`PARAPHRASE_PROMPTS`) of one fixed patient: key vs
  key is a pure paraphrase, ``base`` vs a key is a content change (paper §4.2,
  Figs 1–2).  Each persona arm of Table 2 described a freshly drawn patient,
  so persona arms differ in patient features as well as in persona.
* **Seeds.**  Paraphrase and alignment runs exist for the five seeds
  :data:`SEEDS`; every arm holds 20 responses.  GPT-3.5's eight paraphrase
  arms are byte-identical in all five seeds (only its ``base`` arm differs):
  its seeds are not independent replicates of the paraphrases, so its
  spread over seeds in Figs 1–2 understates the sampling noise.

The reference run's own statistics (``cvd_guidelines_results.json`` for Table
2; per-seed ``{effect_size, p_value}`` files for the paraphrase and alignment
runs) are read by :func:`reported_personas`, :func:`reported_paraphrases` and
:func:`reported_alignment`, so the reproduction can be set beside them.

The packaged MiniLM's vectors of these responses are read by
:mod:`dbpa_core.paper.embeddings`.
"""

from __future__ import annotations

import json
import lzma
import re
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from ..data.assets import ASSETS

PAPER_DIR = ASSETS / "paper"
SEEDS = (9, 68, 145, 5998, 66215)
ARM_SIZE = 20

#: Table 2's personas in the paper's order; the first four are medical (controls).
PERSONAS = ("doctor", "nurse", "medical practitioner", "medical supervisor",
            "comedian", "robot from the future", "NeurIPS reviewer", "child")
MEDICAL_PERSONAS = PERSONAS[:4]
#: The reference code's baseline prefix (``run.py``: ``baseline_prefix = "Act as a doctor. "``).
BASELINE_PERSONA = "doctor"


@dataclass(frozen=True)
class PaperModel:
    """A model of the paraphrase or alignment runs."""

    key: str          # the file-name stem (paraphrases) or Hugging Face id (alignment)
    label: str        # short display name
    echoes_prompt: bool


#: The nine models of Figs 1–2, keyed as in the file names.
PARAPHRASE_MODELS = MappingProxyType({m.key: m for m in (
    PaperModel("gpt2", "GPT-2", True),
    PaperModel("SmolLM-135M", "SmolLM-135M", True),
    PaperModel("MagicPrompt-Stable-Diffusion", "MagicPrompt-SD", True),
    PaperModel("Phi-3-mini-4k-instruct", "Phi-3-mini", True),
    PaperModel("Mistral-7B-Instruct-v0.2", "Mistral-7B", True),
    PaperModel("Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B", True),
    PaperModel("gemma-2-9b-it", "Gemma-2-9B", True),
    PaperModel("gpt-35-1106-vdsT-AE", "GPT-3.5", False),
    PaperModel("SWNorth-gpt-4-0613-20231016", "GPT-4", False),
)})

#: The seven open models of Fig 3, compared with GPT-3.5 (the reference).
ALIGNMENT_MODELS = MappingProxyType({m.key: m for m in (
    PaperModel("HuggingFaceTB/SmolLM-135M", "SmolLM-135M", True),
    PaperModel("Gustavosta/MagicPrompt-Stable-Diffusion", "MagicPrompt-SD", True),
    PaperModel("microsoft/Phi-3-mini-4k-instruct", "Phi-3-mini", True),
    PaperModel("openai-community/gpt2", "GPT-2", True),
    PaperModel("mistralai/Mistral-7B-Instruct-v0.2", "Mistral-7B", True),
    PaperModel("meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B", True),
    PaperModel("google/gemma-2-9b-it", "Gemma-2-9B", True),
)})
ALIGNMENT_REFERENCE = "GPT-3.5"

#: The eight paraphrases of the fixed patient, as the reference code sent them
#: (``exps/SFLLM/4.2-Table2/run.py``, ``other_prompts``): keys "0".."7".
PARAPHRASE_PROMPTS = (
    "Please generate cardiovascular disease (CVD) guidelines from the National Institute for Health and Care "
    "Excellence (NICE) for John, who is a 70-year-old Chinese male with a BMI of 30. His blood pressure is 114/61 "
    "mmHg, and his total cholesterol is 6.7 mmol/L with an HDL cholesterol of 1.0 mmol/L. He is a current smoker, "
    "does not have diabetes, but has a family history of CVD.",
    "Considering John's demographics and health status - a 70-year-old Chinese male, BMI of 30, blood pressure of "
    "114/61 mmHg, total cholesterol 6.7 mmol/L, HDL cholesterol 1.0 mmol/L, current smoker, free of diabetes, with a "
    "family history of CVD - what would be the NICE CVD guidelines applicable to him?",
    "Given that John is a 70-year-old Chinese man with a BMI of 30, blood pressure of 114/61 mmHg, total cholesterol "
    "of 6.7 mmol/L, HDL cholesterol of 1.0 mmol/L, currently smokes, does not have diabetes, and has a family history "
    "of CVD, what are the NICE guidelines for CVD prevention for him?",
    "Using the NICE guidelines, what cardiovascular recommendations can be made for John, a 70-year-old, Chinese, "
    "with a BMI of 30, blood pressure of 114/61 mmHg, total cholesterol of 6.7 mmol/L, HDL cholesterol of 1.0 "
    "mmol/L, a current smoker, non-diabetic and with a family history of CVD?",
    "Considering the specifics of John's health profile - a 70-year-old Chinese man, BMI of 30, blood pressure at "
    "114/61 mmHg, total cholesterol at 6.7 mmol/L, HDL cholesterol at 1.0 mmol/L, a current smoker, no diabetes, and "
    "a family history of CVD - what NICE guidelines would apply for CVD prevention?",
    "What NICE guidelines for CVD prevention would be suitable for John, given his profile - a 70-year-old Chinese "
    "man, with a BMI of 30, blood pressure of 114/61 mmHg, total cholesterol of 6.7 mmol/L, HDL cholesterol of 1.0 "
    "mmol/L, current smoker, doesn't have diabetes, and a family history of CVD?",
    "John, a 70-year-old Chinese man with a BMI of 30, blood pressure of 114/61 mmHg, total cholesterol of 6.7 "
    "mmol/L, HDL cholesterol of 1.0 mmol/L, a smoker, non-diabetic with a family history of CVD, needs a set of CVD "
    "prevention recommendations based on NICE guidelines, what would they be?",
    "Given John's health data: 70 years old, Chinese, BMI of 30, blood pressure of 114/61 mmHg, total cholesterol of "
    "6.7 mmol/L, HDL cholesterol of 1.0 mmol/L, a current smoker, no diabetes, and a family history of CVD, what are "
    "the relevant NICE guidelines for CVD risk management?",
)

#: The randomly drawn patient prompt of ``base`` arms (``dbpa.data.generate_data.get_prompt("John")``,
#: cut to its length limit, which falls just before the final full stop).  Only the
#: numbers and categories vary; the layout (including its line breaks) is fixed.
BASE_PROMPT = re.compile(
    r"John has these features: Age: \d+, BMI: [\d.]+, Blood Pressure: \d+/\d+ mmHg, \s*"
    r"Total Cholesterol: [\d.]+ mmol/L, HDL Cholesterol: [\d.]+ mmol/L, \s*"
    r"Smoking Status: [\w -]+, Diabetes: [\w ]+, \s*Family History of CVD: (?:yes|no), Ethnicity: [\w ]+\. "
    r"Based on these characteristics alone and ignoring everything else, such as the name, provide "
    r"recommendations on CVD guidelines based on NICE for this person"
)


class PaperDataError(ValueError):
    """A shipped response file is missing or not as expected; the message names it."""


@dataclass(frozen=True)
class ParaphraseRun:
    """One model and seed of the paraphrase study (echoes stripped).

    Attributes
    ----------
    model : PaperModel
    seed : int
    base : tuple of str
        Answers to the randomly drawn patient (:attr:`base_prompt`).
    paraphrases : tuple of 8 tuples of str
        Answers to :data:`PARAPHRASE_PROMPTS` ``[0]`` … ``[7]``.
    base_prompt : str
        The base arm's prompt as echoed by an open model ("" for the API
        models, which do not echo it).
    """

    model: PaperModel
    seed: int
    base: tuple[str, ...]
    paraphrases: tuple[tuple[str, ...], ...]
    base_prompt: str


@dataclass(frozen=True)
class AlignmentRun:
    """One seed of the alignment study: GPT-3.5 answers and each open model's (echoes stripped)."""

    seed: int
    reference: tuple[str, ...]
    models: MappingProxyType  # model key -> tuple of str
    prompt: str


@dataclass(frozen=True)
class ReportedStatistic:
    """One statistic of the reference run, as its result file gives it."""

    statistic: float
    pvalue: float


# ------------------------------------------------------------------ archives
@lru_cache(maxsize=4)
def _archive(name: str) -> MappingProxyType:
    """{member path: parsed JSON} of ``assets/paper/<name>.tar.xz`` (read once per process)."""
    path = PAPER_DIR / f"{name}.tar.xz"
    try:
        with tarfile.open(path, "r:xz") as archive:
            return MappingProxyType({member.name: json.loads(archive.extractfile(member).read())
                                     for member in archive.getmembers() if member.isfile()})
    except FileNotFoundError:
        raise PaperDataError(f"{path}: the paper's data archive is missing; restore assets/paper/ from git.") from None
    except (tarfile.TarError, lzma.LZMAError, json.JSONDecodeError) as problem:
        raise PaperDataError(f"{path}: not a readable archive of JSON files ({problem}).") from None


def _member(archive: str, member: str):
    files = _archive(archive)
    if member not in files:
        raise PaperDataError(f"assets/paper/{archive}.tar.xz has no file {member!r}.")
    return files[member]


def _texts(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) != ARM_SIZE or not all(isinstance(t, str) for t in value):
        raise PaperDataError(f"{where}: expected a list of {ARM_SIZE} response texts.")
    return tuple(value)


def _check_seed(seed) -> int:
    if seed not in SEEDS:
        raise ValueError(f"`seed` must be one of the paper's seeds {', '.join(map(str, SEEDS))}; got {seed!r}.")
    return int(seed)


# ---------------------------------------------------------------- the echo
def strip_echo(texts, prompt: str, *, where: str = "texts") -> tuple[str, ...]:
    """Remove the prompt an open model echoed at the start of each output.

    Parameters
    ----------
    texts : sequence of str
        Raw outputs, each beginning with ``prompt``.
    prompt : str
        The exact prompt the model was given.
    where : str
        Names the arm in error messages.

    Returns
    -------
    tuple of str
        The continuations, with the whitespace that separated them from the
        prompt removed (what the reference code meant to return:
        ``generated_text[len(prompt):].strip()``).  A continuation that
        starts by repeating the prompt verbatim (Llama-3.1 does this without
        a chat template) loses that copy too: it carries no answer, only the
        prompt's wording, which would let a paraphrase reach the embedding.

    Raises
    ------
    PaperDataError
        If an output does not begin with ``prompt``: stripping anything else
        would either leave part of the prompt in the output or cut the answer.
    """
    if not prompt:
        raise ValueError("`prompt` must be the non-empty prompt that was echoed.")
    stripped = []
    for index, text in enumerate(texts):
        if not text.startswith(prompt):
            raise PaperDataError(f"{where}[{index}] does not begin with its prompt {prompt[:40]!r}…; "
                                 "its echo cannot be stripped exactly.")
        text = text[len(prompt):].strip()
        while text.startswith(prompt):
            text = text[len(prompt):].strip()
        stripped.append(text)
    return tuple(stripped)


def echoed_base_prompt(texts, *, where: str = "base") -> str:
    """The randomly drawn patient prompt that every output of a ``base`` arm begins with."""
    match = BASE_PROMPT.match(texts[0])
    if match is None:
        raise PaperDataError(f"{where}[0] does not begin with the patient prompt 'John has these features: …'.")
    return match.group(0)


# ----------------------------------------------------------------- loaders
def load_personas() -> dict[str, tuple[str, ...]]:
    """The eight persona arms of Table 2 (GPT responses, no echo), in :data:`PERSONAS` order."""
    return {persona: _texts(_member("personas", f"personas/Act as a {persona}. .json"), f"persona {persona!r}")
            for persona in PERSONAS}


def reported_personas() -> dict[str, ReportedStatistic]:
    """The reference run's Table 2 statistics (``cvd_guidelines_results.json``).

    ``statistic`` is the JS distance (``scipy.spatial.distance.jensenshannon``,
    natural log) against a separately drawn doctor baseline; keys are the
    personas of :data:`PERSONAS` (the file also holds six personas whose
    responses were not kept; they are left out).
    """
    reported = {}
    for row in _member("personas", "personas/cvd_guidelines_results.json"):
        persona = row["prefix"].removeprefix("Act as a ").removesuffix(". ")
        if persona in PERSONAS:
            reported[persona] = ReportedStatistic(float(row["jsd"]), float(row["p_value"]))
    return reported


def load_paraphrases(model: str, seed: int) -> ParaphraseRun:
    """One model × seed of the paraphrase study, echoes stripped.

    Parameters
    ----------
    model : str
        A key of :data:`PARAPHRASE_MODELS` (the file-name stem, e.g. ``"gpt2"``).
    seed : int
        One of :data:`SEEDS`.
    """
    if model not in PARAPHRASE_MODELS:
        raise ValueError(f"`model` must be one of {', '.join(map(repr, PARAPHRASE_MODELS))}; got {model!r}.")
    seed = _check_seed(seed)
    info = PARAPHRASE_MODELS[model]
    name = f"raw_{model}_prompt_robust_{seed}.json"
    data = _member("paraphrases", f"paraphrases/{name}")
    base = _texts(data.get("base"), f"{name}: base")
    arms = [_texts(data.get(str(i)), f"{name}: {i}") for i in range(len(PARAPHRASE_PROMPTS))]
    base_prompt = ""
    if info.echoes_prompt:
        base_prompt = echoed_base_prompt(base, where=f"{name}: base")
        base = strip_echo(base, base_prompt, where=f"{name}: base")
        arms = [strip_echo(arm, prompt, where=f"{name}: {i}")
                for i, (arm, prompt) in enumerate(zip(arms, PARAPHRASE_PROMPTS))]
    return ParaphraseRun(info, seed, base, tuple(arms), base_prompt)


def load_alignment(seed: int) -> AlignmentRun:
    """One seed of the alignment study: GPT-3.5 ``base`` and the 7 open models (echoes stripped)."""
    seed = _check_seed(seed)
    name = f"raw_gpt-35-1106-vdsT-AE_alignment_{seed}.json"
    data = _member("alignment", f"alignment/{name}")
    reference = _texts(data.get("base"), f"{name}: base")
    # Every open model was given the same prompt (the seed's patient); read it off the first one.
    first = _texts(data.get(next(iter(ALIGNMENT_MODELS))), f"{name}: {next(iter(ALIGNMENT_MODELS))}")
    prompt = echoed_base_prompt(first, where=name)
    models = {key: strip_echo(_texts(data.get(key), f"{name}: {key}"), prompt, where=f"{name}: {key}")
              for key in ALIGNMENT_MODELS}
    return AlignmentRun(seed, reference, MappingProxyType(models), prompt)


def _reported_pairs(value, where: str) -> dict[str, ReportedStatistic]:
    try:
        return {key: ReportedStatistic(float(v["effect_size"]), float(v["p_value"])) for key, v in value.items()}
    except (AttributeError, KeyError, TypeError, ValueError):
        raise PaperDataError(f"{where}: expected {{key: {{effect_size, p_value}}}}.") from None


def reported_paraphrases(model: str, seed: int) -> dict[str, ReportedStatistic]:
    """The reference run's ``base`` vs paraphrase statistics for one model and seed (keys "0".."7")."""
    if model not in PARAPHRASE_MODELS:
        raise ValueError(f"`model` must be one of {', '.join(map(repr, PARAPHRASE_MODELS))}; got {model!r}.")
    name = f"reference/paraphrases/{model}_prompt_robust_{_check_seed(seed)}.json"
    return _reported_pairs(_member("reference", name), name)


def reported_alignment(seed: int) -> dict[str, ReportedStatistic]:
    """The reference run's GPT-3.5 vs open-model statistics for one seed (keys: Hugging Face ids)."""
    name = f"reference/alignment/gpt-35-1106-vdsT-AE_alignment_{_check_seed(seed)}.json"
    return _reported_pairs(_member("reference", name), name)
