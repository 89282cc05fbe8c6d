"""Sentences users read about a method's property, each checked on the data path it names (issue 42's rule for claims).

One test per claim that no other test computed: the sentence, where it is shown, and the measurement behind it.
Sizes are the claim's own (the same draws, k and B as the page or the doc states) wherever that stays within
seconds; tolerances are Monte Carlo errors of the stated figure, so a wrong figure fails.
"""

from __future__ import annotations

import collections
import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def three_se(rate: float, n: int) -> float:
    return 3 * np.sqrt(rate * (1 - rate) / n)


def test_each_shipped_persona_arm_answers_its_own_patient():
    # present/reproduction.persona_agreement (Reproduce › Table 2): the medical personas are flagged "because each
    # shipped persona arm answers a different, randomly drawn patient". The answers quote the patient's blood
    # pressure and BMI: each arm quotes its own, and no two arms quote the same.
    from dbpa_core import paper

    usual = {"140/90", "18.5", "24.9"}  # NICE's threshold and the healthy BMI range, quoted by many arms
    patients = {}
    for persona, texts in paper.load_personas().items():
        found = []
        for pattern in (r"\b(\d{2,3}/\d{2,3})\b", r"\b(\d{2}\.\d)\b"):
            counts = collections.Counter(v for t in texts for v in set(re.findall(pattern, t)) if v not in usual)
            value, answers = counts.most_common(1)[0]
            assert answers >= 2, (persona, counts)  # quoted by more than one answer: the arm's patient
            found.append(value)
        patients[persona] = tuple(found)
    for i in range(2):
        assert len({p[i] for p in patients.values()}) == len(patients), patients


def test_energy_meets_the_papers_rule_in_one_dimension():
    # RULE_POWER_AT_63["energy", 1] (79 %), quoted by Reproduce › §3.2, Many perturbations' planner caption and
    # docs/guide/python-api.md ("DBPA with the energy distance meets it in 1-D"); tests/test_power.py re-measures the
    # JS-distance entries only. Same settings as the recorded figure, fresh seed.
    from dbpa_core.stats.power import RULE_POWER_AT_63, gaussian_shift, required_sample_size, simulate_power

    recorded = RULE_POWER_AT_63["energy", 1]
    curve = simulate_power([required_sample_size(0.5)], generator=gaussian_shift(0.5, dim=1), n_trials=100,
                           similarity="neg_l2", discrepancy="energy", n_resamples=199, rng=7)
    assert abs(curve.power[0] - recorded) <= three_se(recorded, 100) + 0.01, curve.power[0]
    assert curve.ci_low[0] <= 0.8 <= curve.ci_high[0]  # "met": the planned 80 % within its Monte Carlo error


#: docs/guide/what-dbpa-cannot-see.md's figures: per k, the share of the example's 100 audits (its own seed) that the
#: JSD and the energy distance flagged, in %.
DOC_RATES = {20: (5, 85), 40: (6, 100), 80: (4, 100)}


@pytest.mark.parametrize(("k", "shift"), [(20, 1.5), (40, 1.5), (80, 1.5), (40, 4.0)])
def test_the_blind_spot_holds_whatever_k_and_however_far(k, shift):
    # The home page's BLIND_SPOT_TEXT ("about as often as α, whatever k", "however far the perturbed outputs
    # moved") and docs/guide/what-dbpa-cannot-see.md (the JSD's and the energy distance's rates at k = 20, 40, 80);
    # tests/test_blind_spot.py pins k = 40 at the example's shift only.
    from dbpa_core.audit.blind_spot import blind_spot_example

    example = blind_spot_example(k=k, shift=shift, n_trials=100)
    jsd, energy = example.rates["jsd"][0], example.rates["energy"][0]
    assert abs(jsd - 0.05) <= three_se(0.05, 100), jsd
    assert energy >= 0.8, energy
    if shift == 1.5:
        assert (round(jsd * 100), round(energy * 100)) == DOC_RATES[k], (jsd, energy)
        page = (REPO / "docs" / "guide" / "what-dbpa-cannot-see.md").read_text(encoding="utf-8")
        shown = ", ".join(f"{DOC_RATES[n][0]} %" for n in (20, 40)) + f" and {DOC_RATES[80][0]} %"
        assert f"The JSD flagged {shown} of them at k = 20, 40 and 80" in page.replace("\n", " ")
        assert f"the energy distance {min(e for _, e in DOC_RATES.values())}–100 %" in page.replace("\n", " ")
        api = (REPO / "docs" / "guide" / "python-api.md").read_text(encoding="utf-8").replace("\n", " ")
        jsds = [j for j, _ in DOC_RATES.values()]
        assert f"(measured {min(jsds)}–{max(jsds)} % at k = 20, 40, 80)" in api


def test_the_blind_spot_snippet_prints_what_its_comments_say():
    page = (REPO / "docs" / "guide" / "what-dbpa-cannot-see.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", page, flags=re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "what-dbpa-cannot-see.md", "exec"), {})
    jsd, energy = map(float, out.getvalue().split())
    assert "large: JSD does not see it" in block and jsd > 0.5, jsd
    assert "small: energy does" in block and energy <= 0.001, energy


def test_omega_comparison_on_the_papers_answers():
    # Across many prompts (the page's ω caption), docs/guide/many-prompts.md ("energy declared the change in 100 %
    # of draws, the JSD ... in 60 % ... GPT-4 against GPT-4: 4 % and 3 %") and `compare --discrepancy`'s help ("the
    # most power with few outputs per prompt"): bench/bench_many.py's draws (9 prompts × 5 answers, 100 draws over
    # the 5 seeds, B = 199), for the two ω the sentences compare.
    import dbpa_core as d
    from dbpa_core.data.store import text_hash
    from dbpa_core.paper.embeddings import load_shipped_embeddings, shipped_embeddings
    from dbpa_core.paper.loaders import SEEDS, load_paraphrases

    shipped, arms, k, draws = shipped_embeddings(), {}, 5, 100
    for seed in SEEDS:
        pair = []
        for model in ("gpt-35-1106-vdsT-AE", "SWNorth-gpt-4-0613-20231016"):
            run = load_paraphrases(model, seed)
            groups = [run.base, *run.paraphrases]
            found = load_shipped_embeddings([t for g in groups for t in g], embedder_key=shipped.embedder_key)
            pair.append([np.stack([found[text_hash(t)] for t in g]) for g in groups])
        arms[seed] = pair
    rates = {}
    for omega in ("energy", "jsd"):
        rng, change, null = np.random.default_rng(2), 0, 0
        for r in range(draws):
            a, b = arms[SEEDS[r % len(SEEDS)]]
            picks = [rng.permutation(20) for _ in a]
            xs = [g[p[:k]] for g, p in zip(a, picks, strict=True)]
            ys = [g[p[k:2 * k]] for g, p in zip(b, picks, strict=True)]
            change += d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=199, rng=rng).pvalue <= 0.05
            halves = ([g[p[:k]] for g, p in zip(b, picks, strict=True)],
                      [g[p[k:2 * k]] for g, p in zip(b, picks, strict=True)])
            null += d.dbpa_test_many(*halves, discrepancy=omega, n_resamples=199, rng=rng).pvalue <= 0.05
        rates[omega] = change / draws, null / draws
    assert rates["energy"][0] >= 0.97, rates
    assert abs(rates["jsd"][0] - 0.60) <= three_se(0.60, draws), rates
    for omega, (_, null) in rates.items():
        assert null <= 0.05 + three_se(0.05, draws), (omega, rates)


def test_compare_never_reads_an_unreachable_alpha_as_chance(tmp_path, capsys):
    # `dbpa compare` with B = 10: the smallest p is 1/11 > α = 0.05, so nothing can be declared whatever the
    # outputs; the verdict must say so, not "within what chance produces" (issue 42: unreachable α said as such).
    from dbpa_core.__main__ import EXIT_OK, main
    from dbpa_core.data.assets import ASSETS

    example = ASSETS / "examples" / "gpt35_vs_gpt4_9_prompts.jsonl"
    assert main(["compare", str(example), "--from", "jsonl", "--arms", "GPT-3.5", "GPT-4", "--n-resamples", "10",
                 "--store", str(tmp_path / "s.sqlite")]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "no change is declared between 'GPT-3.5' and 'GPT-4'" in printed and "none could be" in printed
    assert "within what chance produces" not in printed
    assert "No p-value can reach α = 0.05" in printed


def test_the_rut_example_prints_what_the_guide_shows(tmp_path, capsys):
    # docs/guide/sibling-audits.md shows `dbpa rut rut_recorded.yaml`'s output ("offline, in seconds"): the
    # statistic, the share bound and the MMD beside it, as printed.
    from dbpa_core.__main__ import main

    page = (REPO / "docs" / "guide" / "sibling-audits.md").read_text(encoding="utf-8")
    shown = re.search(r"```text\n(.*?)```", page, flags=re.S).group(1).strip().splitlines()
    assert main(["rut", str(REPO / "dbpa_core" / "assets" / "specs" / "rut_recorded.yaml"),
                 "--out", str(tmp_path / "rut")]) == 0
    printed = capsys.readouterr().out
    for line in shown:
        assert line in printed, (line, printed)
