"""dbpa_core.paper.loaders: the shipped responses of the DBPA paper and their quirks."""

from __future__ import annotations

import hashlib
import tarfile

import pytest

from conftest import hypotest_source
from dbpa_core.paper import embeddings
from dbpa_core.paper import loaders as paper


def raw(archive: str, member: str):
    """A shipped file exactly as the archive holds it (no echo stripping)."""
    return paper._archive(archive)[member]


OPEN_MODELS = [m for m, info in paper.PARAPHRASE_MODELS.items() if info.echoes_prompt]
API_MODELS = [m for m, info in paper.PARAPHRASE_MODELS.items() if not info.echoes_prompt]


def test_shipped_archives_are_small_licensed_and_named():
    # the responses and reference statistics (the shipped embeddings have their own check)
    total = sum(p.stat().st_size for p in paper.PAPER_DIR.iterdir() if p != embeddings.EMBEDDINGS_FILE)
    assert total <= 6 * 1024 * 1024
    notice = (paper.PAPER_DIR / "NOTICE").read_text()
    assert "QiyaoWei/Hypo-Test" in notice and "c586dfef5d8729ea1be0a0778ca8c7c0a04d25ca" in notice
    assert "Apache License" in (paper.PAPER_DIR / "LICENSE").read_text()


def test_shipped_files_are_byte_identical_to_the_source():
    source_copy = hypotest_source()  # fails in CI when missing, as every test needing it does
    for name in ("personas", "paraphrases", "alignment"):
        with tarfile.open(paper.PAPER_DIR / f"{name}.tar.xz", "r:xz") as archive:
            members = [m for m in archive.getmembers() if m.isfile()]
            assert members
            for member in members:
                shipped = hashlib.sha256(archive.extractfile(member).read()).hexdigest()
                source = hashlib.sha256((source_copy / member.name).read_bytes()).hexdigest()
                assert shipped == source, member.name
    assert len(paper._archive("paraphrases")) == len(paper.PARAPHRASE_MODELS) * len(paper.SEEDS)
    assert len(paper._archive("alignment")) == len(paper.SEEDS)


@pytest.mark.parametrize("model", OPEN_MODELS)
def test_echo_is_stripped_exactly_on_every_open_model(model):
    for seed in paper.SEEDS:
        data = raw("paraphrases", f"paraphrases/raw_{model}_prompt_robust_{seed}.json")
        run = paper.load_paraphrases(model, seed)
        # every raw output began with its prompt, and what is left is exactly what followed it
        assert run.base_prompt.startswith("John has these features: Age: ")
        for key, prompt, stripped in [("base", run.base_prompt, run.base),
                                      *[(str(i), p, run.paraphrases[i]) for i, p in
                                        enumerate(paper.PARAPHRASE_PROMPTS)]]:
            assert len(stripped) == paper.ARM_SIZE  # nothing dropped, even empty continuations
            for text, out in zip(data[key], stripped):
                assert text.startswith(prompt)
                assert text[len(prompt):].strip().endswith(out)
                # no prompt reaches the embedding through its echo (nor through a verbatim repeat of it)
                assert not out.startswith(prompt)
                assert not out.startswith("John has these features")


@pytest.mark.parametrize("model", API_MODELS)
def test_api_models_do_not_echo_and_are_left_unchanged(model):
    run = paper.load_paraphrases(model, paper.SEEDS[0])
    data = raw("paraphrases", f"paraphrases/raw_{model}_prompt_robust_{paper.SEEDS[0]}.json")
    assert run.base_prompt == ""
    assert run.base == tuple(data["base"])
    assert run.paraphrases[3] == tuple(data["3"])


def test_alignment_echo_is_stripped_for_every_open_model():
    for seed in paper.SEEDS:
        run = paper.load_alignment(seed)
        data = raw("alignment", f"alignment/raw_gpt-35-1106-vdsT-AE_alignment_{seed}.json")
        assert run.reference == tuple(data["base"])  # GPT-3.5 does not echo
        assert set(run.models) == set(paper.ALIGNMENT_MODELS)
        for key, texts in run.models.items():
            assert all(t.startswith(run.prompt) for t in data[key])
            assert all(not out.startswith("John has these") for out in texts)
            assert [t[len(run.prompt):].strip() for t in data[key]][5].endswith(texts[5])


def test_base_patient_is_drawn_per_seed_and_shared_by_models():
    prompts = {seed: paper.load_paraphrases("gpt2", seed).base_prompt for seed in paper.SEEDS}
    assert len(set(prompts.values())) == len(paper.SEEDS)  # a new random patient per seed
    for seed in paper.SEEDS:
        assert paper.load_paraphrases("SmolLM-135M", seed).base_prompt == prompts[seed]
        assert paper.load_alignment(seed).prompt == prompts[seed]


def test_gpt35_paraphrase_arms_repeat_across_seeds():
    """A quirk of the shipped data (loaders' docstring): GPT-3.5's paraphrases are the same in every seed."""
    for model in paper.PARAPHRASE_MODELS:
        runs = [paper.load_paraphrases(model, seed) for seed in paper.SEEDS]
        repeated = all(run.paraphrases == runs[0].paraphrases for run in runs[1:])
        assert repeated == (model == "gpt-35-1106-vdsT-AE"), model
        assert len({run.base for run in runs}) == len(paper.SEEDS)  # base is drawn anew in every seed


def test_strip_echo_refuses_an_output_without_its_prompt():
    assert paper.strip_echo(["Q? answer", "Q?Q? again"], "Q?") == ("answer", "again")
    with pytest.raises(paper.PaperDataError, match=r"texts\[1\] does not begin"):
        paper.strip_echo(["Q? a", "other"], "Q?")
    # a paraphrase's echo cannot be stripped with another paraphrase's prompt
    run = raw("paraphrases", "paraphrases/raw_gpt2_prompt_robust_9.json")
    with pytest.raises(paper.PaperDataError):
        paper.strip_echo(run["1"], paper.PARAPHRASE_PROMPTS[0], where="gpt2 1")
    with pytest.raises(ValueError, match="`prompt`"):
        paper.strip_echo(["x"], "")


def test_personas_and_their_reported_statistics():
    personas = paper.load_personas()
    assert list(personas) == list(paper.PERSONAS)
    assert all(len(texts) == paper.ARM_SIZE and all(texts) for texts in personas.values())
    assert len({texts[0] for texts in personas.values()}) == len(paper.PERSONAS)
    reported = paper.reported_personas()
    assert set(reported) == set(paper.PERSONAS)  # the six personas without responses are left out
    assert reported["child"].pvalue == 0.0 and reported["comedian"].pvalue == pytest.approx(0.002)
    assert reported["doctor"].statistic == pytest.approx(0.1905084662272806)


def test_reported_paraphrase_and_alignment_statistics():
    gpt2 = paper.reported_paraphrases("gpt2", 9)
    assert set(gpt2) == {str(i) for i in range(8)}
    assert gpt2["6"].pvalue == pytest.approx(0.002)
    alignment = paper.reported_alignment(9)
    assert set(alignment) == set(paper.ALIGNMENT_MODELS)
    assert alignment["openai-community/gpt2"].statistic == pytest.approx(0.43729160251385535)


def test_bad_model_or_seed_names_the_parameter():
    with pytest.raises(ValueError, match="`model` must be one of"):
        paper.load_paraphrases("gpt-5", 9)
    with pytest.raises(ValueError, match="`seed` must be one of the paper's seeds"):
        paper.load_paraphrases("gpt2", 10)
    with pytest.raises(ValueError, match="`seed`"):
        paper.load_alignment(0)
    with pytest.raises(ValueError, match="`model`"):
        paper.reported_paraphrases("nope", 9)
