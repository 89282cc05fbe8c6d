"""Tests of dbpa_core.stats.explain (what changed), its readings, tables, figures, exports, CLI and SPEC option.

Exact cases on toys whose clusters are obvious; the permutation p-values
against scipy's exact hypergeometric tail; calibration under H₀ and power on
the paper's real responses with the shipped MiniLM vectors (nothing is
embedded).
"""

from __future__ import annotations

import doctest
import json
import pickle

import jsonschema
import numpy as np
import pytest
import yaml
from scipy import stats

import dbpa_core
from dbpa_core.__main__ import main
from dbpa_core.audit.spec import SpecError, parse_spec
from dbpa_core.data.store import text_hash
from dbpa_core.present import explanation as figures
from dbpa_core.present.exports import explanation_html
from dbpa_core.present.records import SCHEMA_PATH, explanation_record
from dbpa_core.present.tables import csv_safe, explanation_csv
from dbpa_core.present.explanation_readings import read_explanation, read_explanation_method, read_theme
from dbpa_core.stats import explain as module
from dbpa_core.stats.discrepancy import MMD
from dbpa_core.stats.explain import explain_change

from dbpa_core import paper

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def toy(counts, *, dim=8, noise=0.05, seed=0):
    """Outputs around ``len(counts)`` orthogonal directions; counts[c] = (in arm x, in arm y)."""
    rng = np.random.default_rng(seed)
    words = ["sky blue clear", "mars planet red", "bread flour yeast", "guitar chord song"]
    parts = {"x": ([], []), "y": ([], [])}
    for c, (n_x, n_y) in enumerate(counts):
        for arm, n in (("x", n_x), ("y", n_y)):
            parts[arm][0].extend(f"The {words[c]} number {i}." for i in range(n))
            parts[arm][1].extend(np.eye(dim)[c] + noise * rng.normal(size=(n, dim)))
    return parts["x"][0], parts["y"][0], np.array(parts["x"][1]), np.array(parts["y"][1])


def exact_pvalue(n, k0, size, in_x):
    """P(|n·A − k0·size| ≥ |n·a − k0·size|), A hypergeometric: the exact permutation tail given the cluster."""
    support = np.arange(max(0, size - (n - k0)), min(size, k0) + 1)
    pmf = stats.hypergeom(n, size, k0).pmf(support)
    return min(1.0, pmf[np.abs(n * support - k0 * size) >= abs(n * in_x - k0 * size)].sum())


# ------------------------------------------------------------------ exact cases
def test_docstring_example_runs():
    assert doctest.testmod(module, raise_on_error=True).attempted >= 1


def test_two_obvious_themes():
    texts_x, texts_y, emb_x, emb_y = toy([(14, 2), (0, 12)], noise=0.02)
    e = dbpa_core.explain_change(texts_x, texts_y, emb_x, emb_y, rng=0)
    assert e.n_clusters == 2 and e.candidates[0] == 2
    big, small = e.themes
    assert (big.count_x, big.count_y, small.count_x, small.count_y) == (14, 2, 0, 12)
    assert big.share_x == 1.0 and big.share_y == pytest.approx(2 / 14) and small.share_y == pytest.approx(12 / 14)
    assert small.terms[:3] == ("mars", "planet", "red")  # "the", "number" and digits are not names
    assert set(big.terms[:3]) == {"sky", "blue", "clear"}
    assert small.significant and big.significant and small.pvalue == pytest.approx(1 / 1001)
    assert all("mars" in text for text in small.examples) and all(i >= 14 for i in small.example_indices)
    assert e.significant_themes[0].qvalue <= e.fdr
    # the theme of each pooled output, arm x first
    assert list(e.labels) == [0] * 14 + [0, 0] + [1] * 12
    # arm y's representatives are its Mars outputs, arm x's are sky outputs
    assert all("mars" in t for t in e.representative["y"].texts)
    assert all("sky" in t for t in e.representative["x"].texts)


def test_pvalues_agree_with_the_exact_hypergeometric_tail():
    """Given the clusters, a cluster's count in arm x is hypergeometric under H₀: the permutation p estimates it."""
    counts = [(9, 4), (4, 11), (7, 5)]
    e = explain_change(*toy(counts), n_resamples=20_000, rng=1)
    n, k0 = 40, 20
    assert e.n_clusters == 3
    for theme in e.themes:
        size = theme.count_x + theme.count_y
        exact = exact_pvalue(n, k0, size, theme.count_x)
        # Monte Carlo error of a proportion from 20 000 re-splits, 4 standard errors
        assert abs(theme.pvalue - exact) <= 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1 / 20_001, theme
    # q is Benjamini–Hochberg of the p-values (via adjust_pvalues, i.e. statsmodels)
    from statsmodels.stats.multitest import multipletests

    expected = multipletests([t.pvalue for t in e.themes], alpha=e.fdr, method="fdr_bh")[1]
    np.testing.assert_allclose([t.qvalue for t in e.themes], expected, rtol=1e-12)


def test_every_split_is_counted_when_there_are_no_more_than_b():
    """With C(n, k0) ≤ B the themes' p is the hypergeometric tail itself, as dbpa_test's exact branch."""
    counts = [(4, 1), (1, 4)]  # k0 = k1 = 5: C(10, 5) = 252 splits
    data = toy(counts, noise=0.02)
    e = explain_change(*data, n_resamples=1000, rng=3)
    assert e.exact and e.n_resamples == 252 and e.null_distribution.shape == (252, 2)
    for theme in e.themes:
        size = theme.count_x + theme.count_y
        assert theme.pvalue == pytest.approx(exact_pvalue(10, 5, size, theme.count_x), rel=1e-12), theme
    # the same outputs with B below the number of splits: random re-splits, p with its +1
    sampled = explain_change(*data, n_resamples=200, rng=3)
    assert not sampled.exact and sampled.n_resamples == 200 and sampled.null_distribution.shape == (200, 2)
    assert all(t.pvalue >= 1 / 201 for t in sampled.themes)
    # every split's share difference, each once: the null is the exact distribution (no seed in it)
    again = explain_change(*data, n_resamples=1000, rng=4)
    np.testing.assert_array_equal(np.sort(e.null_distribution, axis=0), np.sort(again.null_distribution, axis=0))
    # what the page and the exports say
    assert "all 252 splits of the pooled outputs" in read_explanation_method(e)
    assert "p is exact" in read_explanation_method(e) and "random" not in read_explanation_method(e)
    assert "200 random re-splits" in read_explanation_method(sampled)
    record = explanation_record(e)
    jsonschema.validate(record, SCHEMA["$defs"]["explanation"])
    assert record["exact"] is True and record["n_resamples"] == 252


def test_themes_beside_a_test_that_declared_no_change_are_called_a_lead():
    """Themes found where the DBPA test declared no change get one sentence (the page's and the JSON's);
    a declared change, an unknown decision or no significant theme get none."""
    from dbpa_core.present.explanation_readings import read_themes_beside_test

    found = explain_change(*toy([(4, 0), (0, 4)], noise=0.02), rng=3)
    nothing = explain_change(*toy([(5, 5), (5, 5)], noise=0.02), rng=3)
    assert found.significant_themes and not nothing.significant_themes
    sentence = read_themes_beside_test(found, declared=False)
    assert sentence.startswith("The test above declared no change, yet these themes' shares differ")
    assert [read_themes_beside_test(found, declared=True), read_themes_beside_test(found, declared=None),
            read_themes_beside_test(nothing, declared=False)] == [None, None, None]
    readings = explanation_record(found, declared=False)["readings"]
    assert readings[-2] == sentence and readings[:-2] == explanation_record(found)["readings"][:-1]
    assert sentence not in explanation_record(found, declared=True)["readings"]


def test_null_distribution_is_the_share_difference_of_each_resplit():
    e = explain_change(*toy([(9, 4), (5, 11), (6, 5)]), n_resamples=300, rng=2)
    null = e.null_distribution
    assert null.shape == (300, 3)
    np.testing.assert_allclose(null.sum(axis=1), 0, atol=1e-12)  # shares sum to 1 in both arms
    # every value is (a/k0 − (n_c − a)/k1) for an integer count a
    sizes = np.array([t.count_x + t.count_y for t in e.themes])
    counts = (null * 20 * 20 + 20 * sizes) / 40
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    observed = np.array([t.share_x - t.share_y for t in e.themes])
    exceed = (np.abs(null) >= np.abs(observed) - 1e-12).sum(axis=0)
    np.testing.assert_allclose([t.pvalue for t in e.themes], (1 + exceed) / 301)


def test_pvalues_never_zero_and_batch_independent():
    data = toy([(12, 0), (0, 12)], noise=0.01)
    results = [explain_change(*data, n_resamples=500, batch=batch, rng=5) for batch in (1, 7, 64, None)]
    for other in results[1:]:
        np.testing.assert_array_equal(other.null_distribution, results[0].null_distribution)
        assert [t.pvalue for t in other.themes] == [t.pvalue for t in results[0].themes]
    assert min(t.pvalue for t in results[0].themes) == 1 / 501  # fully separated: at the floor, never 0


def test_reproducible_for_a_fixed_seed_and_picklable():
    data = toy([(9, 4), (5, 11), (6, 5)], noise=0.3)
    first, again = explain_change(*data, rng=7), explain_change(*data, rng=np.random.default_rng(7))
    assert first.themes == again.themes and first.representative == again.representative
    np.testing.assert_array_equal(first.labels, again.labels)
    copy = pickle.loads(pickle.dumps(first))  # the app caches results with st.cache_data, which pickles
    assert copy.themes == first.themes and copy.representative == first.representative


def test_the_account_does_not_depend_on_the_order_of_the_outputs():
    """The same outputs of each arm in another order give the same themes, p-values and representatives, with
    every index pointing at the same text (a recorded backend replays its outputs in another order per
    replicate; the themes read "2 of 2 differ" before a Resample and "2 of 3" after, on identical outputs)."""
    texts_x, texts_y, emb_x, emb_y = toy([(9, 4), (5, 11), (6, 5)], noise=0.3)
    first = explain_change(texts_x, texts_y, emb_x, emb_y, n_resamples=500, rng=7)
    rng = np.random.default_rng(0)
    for _ in range(3):
        px, py = rng.permutation(len(texts_x)), rng.permutation(len(texts_y))
        tx, ty = [texts_x[i] for i in px], [texts_y[i] for i in py]
        other = explain_change(tx, ty, emb_x[px], emb_y[py], n_resamples=500, rng=7)
        pooled_before, pooled_after = texts_x + texts_y, tx + ty
        assert [(t.terms, t.count_x, t.count_y, t.pvalue, t.qvalue, t.examples) for t in other.themes] == [
            (t.terms, t.count_x, t.count_y, t.pvalue, t.qvalue, t.examples) for t in first.themes]
        for theme in other.themes:  # indices follow the caller's order
            assert [pooled_after[i] for i in theme.example_indices] == list(theme.examples)
        # each output keeps its theme wherever it sits
        assert {text: label for text, label in zip(pooled_after, other.labels)} == {
            text: label for text, label in zip(pooled_before, first.labels)}
        for arm, texts in (("x", tx), ("y", ty)):
            chosen = other.representative[arm]
            assert chosen.texts == first.representative[arm].texts
            assert [texts[i] for i in chosen.indices] == list(chosen.texts)


def test_witness_matches_its_definition():
    texts_x, texts_y, emb_x, emb_y = toy([(9, 4), (5, 11), (6, 5)], noise=0.2)
    e = explain_change(texts_x, texts_y, emb_x, emb_y, n_examples=20, rng=0)
    pooled = np.vstack([emb_x, emb_y])
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    kernel = MMD(bandwidth=e.bandwidth).matrix(pooled, None, "cosine")
    for key, own, other in (("x", range(20), range(20, 40)), ("y", range(20, 40), range(20))):
        rep = e.representative[key]
        offset = 0 if key == "x" else 20
        for index, value in zip(rep.indices, rep.witness):
            i = offset + index
            expected = (np.mean([kernel[i, j] for j in own if j != i]) - np.mean([kernel[i, j] for j in other]))
            assert value == pytest.approx(expected, rel=1e-10, abs=1e-12)
        assert list(rep.witness) == sorted(rep.witness, reverse=True) and len(rep.indices) == 20
    # the bandwidth is the median heuristic of the package's MMD
    distances = np.linalg.norm(pooled[:, None] - pooled[None], axis=2)[np.triu_indices(40, 1)]
    assert e.bandwidth == pytest.approx(np.median(distances), rel=1e-9)


def test_identical_outputs_are_one_theme_and_nothing_is_declared():
    e = explain_change(["same"] * 5, ["same"] * 5, np.ones((5, 3)), np.ones((5, 3)), rng=0)
    assert e.n_clusters == 1 and e.themes[0].pvalue == 1.0 and not e.significant_themes
    assert "diffuse" in read_explanation(e)[0]


def test_themes_without_words_are_named_by_number():
    e = explain_change(["", "1 2"] * 5, ["the", "a 3"] * 5, *toy([(10, 0), (0, 10)])[2:], rng=0)
    assert all(t.terms == () for t in e.themes)
    assert "#1 (no distinguishing words)" in read_theme(e.themes[0], e.fdr)


@pytest.mark.parametrize(("change", "match"), [
    ({"texts_x": ["a"] * 5}, "`texts_x` has 5 outputs but `emb_x` has 6 rows"),
    ({"emb_y": np.zeros((6, 4))}, "`emb_y` row 0 is all zeros"),
    ({"emb_x": np.full((6, 4), np.nan)}, "`emb_x` contains NaN"),
    ({"emb_y": np.ones((6, 5))}, "`emb_x` and `emb_y` must have the same embedding dimension"),
    ({"texts_y": ["a", 3, "b", "c", "d", "e"]}, r"`texts_y\[1\]` must be a str"),
    ({"texts_x": ["a"], "emb_x": np.ones((1, 4))}, "`texts_x` needs at least 2"),
    ({"fdr": 0}, "`fdr` must lie in"),
    ({"fdr": 1.0}, "`fdr` must lie in"),
    ({"n_resamples": 0}, "`n_resamples` must be an integer >= 1"),
    ({"max_clusters": 1}, "`max_clusters` must be an integer >= 2"),
    ({"n_terms": 0}, "`n_terms`"),
    ({"n_examples": 0}, "`n_examples`"),
    ({"batch": 0}, "`batch`"),
    ({"rng": "seed"}, "`rng` must be"),
])
def test_bad_input_names_the_parameter(change, match):
    arguments = {"texts_x": ["a"] * 6, "texts_y": ["b"] * 6, "emb_x": np.eye(6, 4) + 1, "emb_y": np.eye(6, 4) + 2}
    arguments.update(change)
    keywords = {k: arguments.pop(k) for k in list(arguments) if k not in ("texts_x", "texts_y", "emb_x", "emb_y")}
    with pytest.raises(ValueError, match=match):
        explain_change(arguments["texts_x"], arguments["texts_y"], arguments["emb_x"], arguments["emb_y"], **keywords)


# ------------------------------------------------------- real text (paper data)
def shipped_vectors(texts):
    """The shipped MiniLM vectors of the paper's responses (nothing is embedded)."""
    shipped = paper.shipped_embeddings()
    return shipped.vectors[[shipped.rows[text_hash(t)] for t in texts]].astype(np.float64)


def test_calibration_under_h0_on_real_text():
    """Two random halves of one arm: the rate of audits declaring any theme stays ≤ FDR (within Monte Carlo error).

    The arm: GPT-3.5's 100 answers to the paper's first paraphrase of the fixed
    patient (20 per seed × 5 seeds; §4.2), split 50/50 at random 200 times.
    Under the global null every declared theme is false, so FDR = the chance
    of declaring any.  The unadjusted rate (any theme with p ≤ FDR) is checked
    to exceed the tolerance, so the test would catch a missing correction.
    """
    arm = [t for seed in paper.SEEDS for t in paper.load_paraphrases("gpt-35-1106-vdsT-AE", seed).paraphrases[0]]
    vectors = shipped_vectors(arm)
    rng = np.random.default_rng(2026)
    fdr, splits = 0.1, 200
    declared = unadjusted = 0
    small_p = []
    for _ in range(splits):
        order = rng.permutation(len(arm))
        a, b = order[:50], order[50:]
        e = explain_change([arm[i] for i in a], [arm[i] for i in b], vectors[a], vectors[b], fdr=fdr,
                           n_resamples=500, rng=rng)
        declared += bool(e.significant_themes)
        unadjusted += any(t.pvalue <= fdr for t in e.themes)
        small_p.append(np.mean([t.pvalue <= fdr for t in e.themes]))
    tolerance = fdr + 3 * np.sqrt(fdr * (1 - fdr) / splits)
    assert declared / splits <= tolerance, declared
    assert np.mean(small_p) <= tolerance  # each theme's p-value is valid on its own
    assert unadjusted / splits > tolerance, unadjusted  # without BH the same audits would fail this test


def test_an_injected_theme_is_found_on_real_text():
    """One arm a mixture: 70 % medical answers, 30 % the comedian persona's (paper Table 2's responses).

    Both arms draw their medical answers from the four medical personas (the
    paper's controls, 80 answers); the perturbed arm replaces 12 of its 40 by
    comedian answers.  In each of 10 random mixtures a significant theme must
    hold at least 10 of the 12 injected answers, be at least 80 % injected,
    be more common in the perturbed arm, and its examples must all be injected.
    """
    personas = paper.load_personas()
    medical = [t for persona in paper.MEDICAL_PERSONAS for t in personas[persona]]
    injected = set(personas["comedian"])
    for seed in range(10):
        rng = np.random.default_rng(seed)
        m, c = rng.permutation(len(medical)), rng.permutation(20)
        texts_x = [medical[i] for i in m[:40]]
        texts_y = [medical[i] for i in m[40:68]] + [personas["comedian"][i] for i in c[:12]]
        e = explain_change(texts_x, texts_y, shipped_vectors(texts_x), shipped_vectors(texts_y), rng=seed)
        pooled = texts_x + texts_y
        found = []
        for theme in e.significant_themes:
            members = [pooled[i] for i in np.flatnonzero(e.labels == theme.cluster)]
            hits = sum(t in injected for t in members)
            if (hits >= 10 and hits >= 0.8 * len(members) and theme.share_y > theme.share_x
                    and all(t in injected for t in theme.examples)):
                found.append(theme)
        assert found, (seed, [(t.terms, t.count_x, t.count_y, t.qvalue) for t in e.themes])
        assert "Theme *" in read_theme(found[0], e.fdr) and "of perturbed outputs" in read_theme(found[0], e.fdr)


# ------------------------------------------------------ readings, figures, exports
@pytest.fixture(scope="module")
def explained():
    texts_x, texts_y, emb_x, emb_y = toy([(12, 1), (1, 11), (6, 7)], noise=0.05)
    texts_y[1:12] = [f"=HYPERLINK(\"http://x\") <b>{t}</b>" for t in texts_y[1:12]]  # formula- and markup-looking
    return texts_x, texts_y, emb_x, emb_y, explain_change(texts_x, texts_y, emb_x, emb_y, rng=0)


def test_readings_name_only_significant_themes(explained):
    *_, e = explained
    sentences = read_explanation(e)
    found = e.significant_themes
    assert len(found) == 2 and len(sentences) == len(found) + 1
    assert sentences[0].startswith("Theme *") and ", q = " in sentences[0] and "% of perturbed outputs vs" in sentences[0]
    assert "2 of 3 themes" in sentences[-1]
    quiet = next(t for t in e.themes if not t.significant)
    assert "not a finding" in read_theme(quiet, e.fdr)
    assert not any(", ".join(quiet.terms[:3]) in s for s in sentences)
    assert "grouped into 3 themes" in read_explanation_method(e)


def test_diffuse_change_is_said_so():
    e = explain_change(*toy([(10, 10), (10, 10)]), rng=0)
    assert not e.significant_themes
    [sentence] = read_explanation(e)
    assert "diffuse" in sentence and "No theme" in sentence


def test_tables_and_figures(explained):
    texts_x, texts_y, emb_x, emb_y, e = explained
    table = figures.themes_table(e)
    assert list(table["significant (FDR 0.1)"]) == ["yes", "yes", "no"]
    assert table["q (BH)"].is_monotonic_increasing
    reps = figures.representatives_table(e)
    assert list(reps["arm"]) == ["original"] * 3 + ["perturbed"] * 3
    bars = figures.theme_shares(e)
    assert len(bars.data) == 2 and sum("★" in label for label in bars.data[0].y) == 2
    cloud = figures.theme_cloud(np.vstack([emb_x, emb_y])[:, :2], e, texts_x + texts_y)
    grey = [trace for trace in cloud.data if trace.marker.color == figures.NOT_SIGNIFICANT_COLOUR]
    assert grey and all("not significant" in trace.name for trace in grey)
    assert sum(len(trace.x) for trace in cloud.data) == 38
    assert {trace.marker.symbol for trace in cloud.data} == {"circle", "diamond"}
    hovers = [h for trace in cloud.data for h in trace.hovertext]
    assert sum("&lt;b&gt;" in h for h in hovers) == 11 and not any("<b>The" in h for h in hovers)


def test_exports_json_html_and_csv(explained):
    *_, e = explained
    record = explanation_record(e)
    jsonschema.validate(record, SCHEMA["$defs"]["explanation"])
    assert json.loads(json.dumps(record)) == record
    assert [t["significant"] for t in record["themes"]] == [t.significant for t in e.themes]
    assert set(record["representative"]) == {"x", "y"} and record["fdr"] == 0.1
    page = explanation_html(record)
    assert "What changed" in page and "&lt;b&gt;The mars" in page and "<b>The" not in page
    csv = explanation_csv(e)
    assert "'=HYPERLINK" in csv and "\n=" not in csv and ",=" not in csv and ',"=' not in csv
    assert csv_safe("-1 + 2") == "'-1 + 2" and csv_safe("fine") == "fine" and csv_safe(3) == 3


# -------------------------------------------------------------- CLI and SPEC
def test_command_line_test_explain(tmp_path, capsys):
    personas = paper.load_personas()
    medical = [t for persona in paper.MEDICAL_PERSONAS for t in personas[persona]]
    arms = {"a": medical[:30], "b": medical[30:45] + list(personas["comedian"][:15])}
    for name, texts in arms.items():
        (tmp_path / f"{name}.jsonl").write_text("\n".join(
            json.dumps({"text": t, "embedding": v.tolist()}) for t, v in zip(texts, shipped_vectors(texts))))
    out = tmp_path / "out.json"
    assert main(["test", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--explain", "--json", str(out),
                 "--n-resamples", "300"]) == 0
    record = json.loads(out.read_text())
    explanation = record["explanation"]
    assert {"themes", "representative"} <= set(explanation) and explanation["n_resamples"] == 300
    assert any(t["significant"] and t["share_y"] > 0.4 for t in explanation["themes"])
    assert "What changed:" in capsys.readouterr().out
    assert main(["test", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--explain", "--fdr", "2"]) == 2
    assert "--fdr" in capsys.readouterr().err


@pytest.mark.parametrize(("value", "expected"), [(True, {"fdr": 0.1}), ({"fdr": 0.05}, {"fdr": 0.05}),
                                                  (False, None), (None, None)])
def test_spec_explain_option(value, expected):
    spec = parse_spec({"scenario": "seasons_question", "explain": value})
    assert spec.explain == expected


@pytest.mark.parametrize(("value", "match"), [({"fdr": 1.5}, "explain.fdr"), ({"alpha": 0.1}, "explain.alpha"),
                                              ("yes", "explain")])
def test_bad_spec_explain_names_the_key(value, match):
    with pytest.raises(SpecError, match=match):
        parse_spec({"scenario": "seasons_question", "explain": value})


def test_audit_spec_with_explain_reports_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    spec = {"name": "t", "sampler": {"backend": "simulated"}, "scenario": "seasons_question",
            "perturbations": ["mars"], "k": 12, "n_resamples": 200, "discrepancy": "energy", "seed": 0,
            "explain": {"fdr": 0.1}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["audit", str(path), "--out", str(tmp_path / "out")]) == 0
    record = json.loads((tmp_path / "out" / "report.json").read_text())
    jsonschema.validate(record, SCHEMA)
    [perturbation] = record["perturbations"]
    assert perturbation["explanation"]["n_resamples"] == 200 and record["settings"]["explain"] == {"fdr": 0.1}
    assert "What changed: " in (tmp_path / "out" / "report.html").read_text()
    assert "what changed:" in capsys.readouterr().out


def test_theme_shares_keep_their_precision_and_read_as_the_sentences():
    """The themes table (its CSV) keeps a share as measured: 1 output in 400 is 0.25 %, not 0; the screen's table
    writes it as the sentence does ("<1"), never "0", which would say no output is in the theme."""
    from dbpa_core.present.explanation import shown_share
    from dbpa_core.present.formatting import format_share

    assert shown_share(0.25) == "<1" and format_share(1 / 400) == "<1 %"
    assert shown_share(99.75) == ">99" and shown_share(0.0) == "0" and shown_share(100.0) == "100"
    for count, n in ((155, 200), (1, 3), (2, 3), (31, 40), (7, 2000), (1999, 2000)):
        percent = round(100 * count / n, 4)  # as themes_table stores it
        assert shown_share(percent) + " %" == format_share(count / n), (count, n)
