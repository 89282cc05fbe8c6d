"""Sequential DBPA (dbpa_core.stats.sequential): level under the stopping rule, early stops, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import dbpa_core as d
from dbpa_core.stats import _kernels
from dbpa_core.stats.permutation import DegenerateSampleWarning
from dbpa_core.stats.sequential import SequentialResult, _within_batch_perms
from dbpa_core.stats.spending import alpha_spent

DIM = 8


def arms(shift: float, seed: int):
    """draw_x, draw_y: Gaussian clouds whose means differ in direction by ``shift``."""
    data = np.random.default_rng(seed)
    mean_x, mean_y = np.zeros(DIM), np.zeros(DIM)
    mean_x[0] = mean_y[0] = 2.0
    mean_y[1] = shift
    return (lambda n: data.normal(size=(n, DIM)) + mean_x), (lambda n: data.normal(size=(n, DIM)) + mean_y)


def test_public_names():
    from dbpa_core.stats import sequential

    assert d.sequential_dbpa_test is sequential.sequential_dbpa_test
    assert d.SequentialResult is SequentialResult


def test_stops_early_on_a_clear_change():
    result = d.sequential_dbpa_test(*arms(3.0, seed=0), k_max=200, batch_size=10, n_resamples=999, rng=1)
    assert result.reject and result.stopped == "reject"
    assert result.n_per_arm <= 100  # at least 2× fewer samples than k_max
    assert result.pvalue <= result.looks[-1].alpha_spent <= 0.05
    assert result.x.shape == result.y.shape == (result.n_per_arm, DIM)
    assert [look.n_per_arm for look in result.looks] == list(range(10, result.n_per_arm + 1, 10))


def test_each_look_is_the_dbpa_statistic_on_everything_drawn_so_far():
    result = d.sequential_dbpa_test(*arms(0.0, seed=3), k_max=30, batch_size=10, n_resamples=99, rng=0)
    assert result.stopped == "k_max" and len(result.looks) == 3
    for look in result.looks:
        n = look.n_per_arm
        fixed = d.dbpa_test(result.x[:n], result.y[:n], n_resamples=1, rng=0)
        assert_allclose(look.statistic, fixed.statistic, rtol=1e-12)
    assert result.null_paths.shape == (99, 3)
    assert_array_equal(result.null_distribution, result.null_paths[:, -1])


def test_one_look_is_the_fixed_k_test_on_the_same_engine():
    """With one batch the within-batch re-splits are the fixed-k test's splits, from the same stream:
    the shared engine gives the same ω, P0, P1, null, effect sizes and kind-specific results."""
    x, y = (draw(12) for draw in arms(1.0, seed=9))
    sequential = d.sequential_dbpa_test(lambda n: x[:n], lambda n: y[:n], k_max=12, batch_size=12,
                                        n_resamples=499, rng=3)
    fixed = d.dbpa_test(x, y, n_resamples=499, rng=3)
    assert not fixed.exact and len(sequential.looks) == 1
    assert sequential.statistic == fixed.statistic
    assert_array_equal(sequential.null_distribution, fixed.null_distribution)
    assert_array_equal(sequential.within_similarities, fixed.within_similarities)
    assert_array_equal(sequential.across_similarities, fixed.across_similarities)
    assert (sequential.effect_size, sequential.standardized_effect) == (fixed.effect_size, fixed.standardized_effect)
    assert (sequential.kind, fixed.kind) == ("sequential", "fixed")


def test_decision_boundary_and_pvalue_agree_at_every_look():
    for shift, seed in ((0.0, 4), (1.0, 5), (3.0, 6)):
        result = d.sequential_dbpa_test(*arms(shift, seed), k_max=80, batch_size=10, n_resamples=299, rng=seed)
        for index, look in enumerate(result.looks):
            crosses = look.pvalue <= look.alpha_spent + 1e-12
            assert crosses == (look.statistic > look.boundary)
            # only the stopping look may cross
            assert crosses == (result.reject and index == len(result.looks) - 1)
        if not result.reject:
            assert result.pvalue > 0.05


def test_every_resample_exchanges_outputs_only_within_its_batch():
    rng = np.random.default_rng(0)
    sizes = (3, 3, 2)
    splits = [_kernels.shuffled_prefixes(rng.random((50, s)), 2 * s) for s in sizes]
    n = sum(sizes)
    perms = _within_batch_perms(splits, n)
    batch_of = np.concatenate([np.repeat(np.arange(3), sizes)] * 2)  # pooled row → its batch
    for row in perms:
        assert sorted(row) == list(range(2 * n))
        # arm 0 (first n entries) takes exactly s_j outputs of batch j
        assert_array_equal(np.bincount(batch_of[row[:n]], minlength=3), sizes)


def test_last_batch_is_smaller_and_draws_alternate():
    calls = []
    data = np.random.default_rng(0)

    def draw(name):
        return lambda n: calls.append((name, n)) or data.normal(size=(n, DIM))

    result = d.sequential_dbpa_test(draw("x"), draw("y"), k_max=25, batch_size=10, n_resamples=19, rng=0)
    assert result.n_per_arm == 25
    assert calls == [("x", 10), ("y", 10), ("x", 10), ("y", 10), ("x", 5), ("y", 5)]


def test_seeded_runs_repeat_and_seeds_matter():
    first = d.sequential_dbpa_test(*arms(1.0, seed=7), k_max=40, n_resamples=199, rng=3)
    again = d.sequential_dbpa_test(*arms(1.0, seed=7), k_max=40, n_resamples=199, rng=np.random.default_rng(3))
    other = d.sequential_dbpa_test(*arms(1.0, seed=7), k_max=40, n_resamples=199, rng=4)
    assert_array_equal(first.null_paths, again.null_paths)
    assert first.looks == again.looks
    assert not np.array_equal(first.null_paths, other.null_paths)


def test_futility_stops_a_null_run_early_with_p_one():
    result = d.sequential_dbpa_test(*arms(0.0, seed=8), k_max=200, n_resamples=199, futility=0.3, rng=0)
    assert result.stopped == "futility" and not result.reject
    assert result.n_per_arm < 200 and result.pvalue == 1.0
    without = d.sequential_dbpa_test(*arms(0.0, seed=8), k_max=200, n_resamples=199, rng=0)
    assert without.n_per_arm == 200


def test_text_similarities_take_texts():
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "eps"]

    def texts(pool):
        return lambda n: [" ".join(rng.choice(pool, size=6)) for _ in range(n)]

    result = d.sequential_dbpa_test(texts(words[:3]), texts(words[2:]), similarity="rouge_l", k_max=40,
                                    n_resamples=199, rng=0)
    assert result.reject and len(result.x) == result.n_per_arm


def test_identical_outputs_never_reject():
    with pytest.warns(DegenerateSampleWarning):
        result = d.sequential_dbpa_test(lambda n: np.ones((n, 3)), lambda n: np.ones((n, 3)), k_max=20,
                                        n_resamples=99, rng=0)
    assert not result.reject and result.n_per_arm == 20 and result.warnings


def test_alpha_spending_functions():
    t = np.linspace(0, 1, 11)
    for spending in ("pocock", "obrien_fleming"):
        spent = alpha_spent(t, 0.05, spending)
        assert spent[0] == 0 and spent[-1] == pytest.approx(0.05, rel=1e-12)
        assert np.all(np.diff(spent) > 0)
    # O'Brien–Fleming keeps its α for late looks, Pocock spends early
    assert alpha_spent(0.2, 0.05, "obrien_fleming") < 1e-4 < 0.01 < alpha_spent(0.2, 0.05, "pocock")


def good():
    return np.random.default_rng(0).normal(size=(10, DIM))


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(alpha=1.5), "`alpha`"),
    (dict(batch_size=1), "`batch_size`"),
    (dict(k_max=5, batch_size=10), "`k_max`"),
    (dict(n_resamples=0), "`n_resamples`"),
    (dict(n_resamples=1_000_001), "`n_resamples` must be an integer >= 1 and <= 1,000,000"),
    (dict(spending="linear"), "`spending`"),
    (dict(futility=2.0), "`futility`"),
    (dict(similarity="jaccard"), "`similarity`"),
    (dict(similarity="bleu", discrepancy="mmd"), "needs embeddings"),
    (dict(rng="seed"), "`rng`"),
])
def test_bad_settings_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        d.sequential_dbpa_test(lambda n: good()[:n], lambda n: good()[:n], **kwargs)


@pytest.mark.parametrize(("draw_y", "message"), [
    ("not callable", "`draw_y` must be a callable"),
    (lambda n: good()[: n - 1], r"`draw_y\(10\)` must return exactly 10"),
    (lambda n: good()[:n, :3], "dimension 3"),
    (lambda n: np.full((n, DIM), np.nan), "`draw_y` contains NaN"),
])
def test_bad_draws_name_the_callable(draw_y, message):
    with pytest.raises(ValueError, match=message):
        d.sequential_dbpa_test(lambda n: good()[:n], draw_y, k_max=10, n_resamples=9)


def naive_peeking_rejects(draw_x, draw_y, *, alpha, k_max, batch_size, n_resamples, rng) -> bool:
    """The shortcut the sequential test replaces: stop at the first look whose fixed-k p is ≤ α."""
    x, y = np.empty((0, DIM)), np.empty((0, DIM))
    for _ in range(k_max // batch_size):
        x, y = np.vstack([x, draw_x(batch_size)]), np.vstack([y, draw_y(batch_size)])
        if d.dbpa_test(x, y, n_resamples=n_resamples, rng=rng).pvalue <= alpha:
            return True
    return False


@pytest.mark.slow
def test_level_holds_under_the_stopping_rule_and_naive_peeking_inflates_it():
    """Both arms from one distribution, 2000 audits: the sequential test rejects ≤ α; peeking does not."""
    repetitions, alpha = 2000, 0.05
    settings = dict(alpha=alpha, k_max=50, batch_size=10, n_resamples=99)
    sequential = naive = 0
    for repetition in range(repetitions):
        seed = np.random.SeedSequence([20251122, repetition])
        data_seed, test_seed = seed.spawn(2)
        sequential += d.sequential_dbpa_test(*arms(0.0, data_seed), rng=np.random.default_rng(test_seed),
                                             **settings).reject
        naive += naive_peeking_rejects(*arms(0.0, data_seed), rng=np.random.default_rng(test_seed), **settings)
    monte_carlo_error = np.sqrt(alpha * (1 - alpha) / repetitions)  # 0.0049
    assert 0.025 <= sequential / repetitions <= alpha + 3 * monte_carlo_error
    assert naive / repetitions > alpha + 5 * monte_carlo_error


# ------------------------------------------------------------------ audit runner, SPEC, command line, present
from dbpa_core.audit import AuditRequest, SamplerConfig, SequentialPlan, run  # noqa: E402
from dbpa_core.audit.spec import SpecError, parse_spec  # noqa: E402
from dbpa_core.data.scenarios import load_scenarios  # noqa: E402
from dbpa_core.embedders.base import Embedder  # noqa: E402
from dbpa_core.present.figures import sequential_path  # noqa: E402
from dbpa_core.present.readings import read_sequential  # noqa: E402
from dbpa_core.samplers.simulated import SimulatedSampler  # noqa: E402


class CountingSampler(SimulatedSampler):
    """The simulated model, counting the outputs it actually generates."""

    def __init__(self):
        super().__init__()
        self.generated = 0

    def complete(self, *args, **kwargs):
        self.generated += 1
        return super().complete(*args, **kwargs)


class WordCounts(Embedder):
    """Hashed bag of words: a fast embedder peer, so the runner tests do not wait for MiniLM on a busy CPU."""

    name = "word-counts-test"

    def embed_batch(self, texts):
        vectors = np.zeros((len(texts), 128))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                vectors[row, int.from_bytes(word.encode()[:8].ljust(8, b"_"), "little") % 127] += 1
            vectors[row, 127] = 1.0  # keeps an empty output a unit vector
        return vectors


def sequential_family(sampler, store, **settings):
    request = AuditRequest.from_scenario(load_scenarios()["seasons_question"], ["paraphrase_1", "mars"],
                                         sampler=SamplerConfig("simulated"), n_resamples=499, discrepancy="energy",
                                         seed=0, sequential=SequentialPlan(k_max=60, batch_size=10, **settings))
    return run(request, sampler_for=lambda config: sampler, embedder=WordCounts(), store=store)


def test_audit_family_stops_each_perturbation_on_its_own_and_resumes_from_the_store(store):
    sampler = CountingSampler()
    family = sequential_family(sampler, store)
    control, target = family.results
    assert target.test.reject and target.test.n_per_arm < 60
    assert not control.test.reject and control.test.n_per_arm == 60
    # each test ran at α/m; Bonferroni-adjusted p ≤ α exactly when it rejected
    assert all(r.test.alpha == 0.025 for r in family.results)
    assert list(family.adjusted.reject) == [r.test.reject for r in family.results]
    assert family.settings["sequential"] == {"k_max": 60, "batch_size": 10, "spending": "pocock", "futility": None}
    # the stage-wise p-values are valid at every level: Holm may declare more, never less
    assert np.all(family.recorrected("holm", 0.05).adjusted.reject >= family.adjusted.reject)
    # the arms are what the tests drew; the shared original was drawn once up to the longest test
    assert len(target.perturbed.texts) == target.test.n_per_arm == len(target.original.texts)
    assert target.original.texts == control.original.texts[: target.test.n_per_arm]
    assert_allclose(target.original.embeddings, target.test.x, rtol=1e-6)
    assert sampler.generated == 60 + 60 + target.test.n_per_arm
    assert control.original.sample_ids[-1].endswith(":59")
    # a second run reads every sample from the store and reaches the same decisions
    again = CountingSampler()
    repeat = sequential_family(again, store)
    assert again.generated == 0
    assert [r.test.looks for r in repeat.results] == [r.test.looks for r in family.results]


def test_audit_without_a_store_draws_each_sample_once():
    sampler = CountingSampler()
    family = sequential_family(sampler, None)
    assert sampler.generated == 60 + 60 + family.results[1].test.n_per_arm


def spec(**overrides):
    return {"sampler": {"backend": "simulated"}, "scenario": "seasons_question", "perturbations": ["mars"],
            **overrides}


def test_spec_sequential_block():
    parsed = parse_spec(spec(sequential={"batch_size": 5, "k_max": 50, "futility": 0.5}))
    assert parsed.sequential == {"batch_size": 5, "k_max": 50, "spending": "pocock", "futility": 0.5}
    assert parsed.k == 50
    assert parse_spec(spec(k=30)).sequential is None


@pytest.mark.parametrize(("overrides", "key"), [
    (dict(k=30, sequential={"k_max": 50}), "`k`"),
    (dict(sequential={"batch_size": 1}), "`sequential.batch_size`"),
    (dict(sequential={"batch_size": 10, "k_max": 5}), "`sequential.k_max`"),
    (dict(sequential={"spending": "linear"}), "`sequential.spending`"),
    (dict(sequential={"futility": 1.5}), "`sequential.futility`"),
    (dict(sequential={"looks": 3}), "`sequential.looks`"),
    (dict(sequential=[10, 200]), "`sequential`"),
])
def test_spec_sequential_errors_name_the_key(overrides, key):
    with pytest.raises(SpecError, match=key.replace(".", r"\.")):
        parse_spec(spec(**overrides))


def test_command_line_sequential_flag(tmp_path, monkeypatch, capsys):
    import json

    import jsonschema
    import yaml

    from dbpa_core.__main__ import main
    from dbpa_core.present.records import SCHEMA_PATH

    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec(perturbations=["paraphrase_1", "mars"], k=40, n_resamples=199,
                                        discrepancy="energy")))
    assert main(["audit", str(path), "--sequential", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "of at most 40 samples per arm" in printed
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    assert report["settings"]["sequential"] == {"k_max": 40, "batch_size": 10, "spending": "pocock", "futility": None}
    assert "of at most 40 samples per arm" in (tmp_path / "out" / "report.html").read_text()
    mars = report["perturbations"][1]
    assert mars["reject"] and mars["n_perturbed"] < 40 and len(mars["sample_ids"]) == mars["n_perturbed"]


def test_reading_and_figure_of_a_sequential_result():
    early = d.sequential_dbpa_test(*arms(3.0, seed=0), k_max=200, n_resamples=999, rng=1)
    sentence = read_sequential(early)
    assert sentence.startswith(f"Stopped after {early.n_per_arm} of at most 200 samples per arm: the change was "
                               "clear early")
    assert f"{100 * (1 - early.n_per_arm / 200):.0f} % of the sampling budget saved" in sentence
    null = d.sequential_dbpa_test(*arms(0.0, seed=3), k_max=30, n_resamples=99, rng=0)
    assert read_sequential(null).startswith("Ran to the maximum of 30 samples per arm")
    futile = d.sequential_dbpa_test(*arms(0.0, seed=8), k_max=200, n_resamples=199, futility=0.3, rng=0)
    assert "for futility" in read_sequential(futile)

    figure = sequential_path(early, shown_resamples=5)
    observed = next(t for t in figure.data if t.name == "observed ω")
    assert list(observed.y) == [look.statistic for look in early.looks]
    boundary = next(t for t in figure.data if t.name.startswith("boundary"))
    assert [b is None for b in boundary.y] == [not np.isfinite(look.boundary) for look in early.looks]
    assert sum(t.legendgroup == "null" for t in figure.data) == 5
    assert figure.data[-1].name == "rejected H₀"


# ------------------------------------------------------------------ the app's sequential mode
def test_app_audit_one_sequential_mode(tmp_path, monkeypatch):
    from test_app import capture_downloads, start

    sent = capture_downloads(monkeypatch)
    at = start(tmp_path, monkeypatch, page="audit_one")
    at.selectbox(key="one_scenario").set_value("seasons_question").run()
    at.selectbox(key="one_perturbation").set_value("mars").run()
    at.number_input(key="one_k").set_value(100).run()
    at.toggle(key="one_sequential").set_value(True).run()
    at.button(key="one_run").click().run()
    assert not at.exception and not at.error
    drawn, _, budget = next(m.value for m in at.metric if m.label == "Samples per arm").partition(" / ")
    assert budget == "100" and int(drawn) < 100
    assert next(m.value for m in at.metric if m.label == "Decision") == "REJECT H₀"
    assert any(c.value.startswith(f"Stopped after {drawn} of at most 100 samples per arm: the change was clear "
                                  "early") for c in at.caption)
    # the downloads describe the sequential test (trial 7: the JSON had a fixed run's keys, the HTML read
    # "p > α" as if p against α decided): its design, plan and looks, its own reading and boundary decision
    import json

    record = json.loads(sent["audit_result.json"])
    assert (record["design"], record["k_max"], record["n_per_arm"], record["decision"]) == (
        "sequential", 100, int(drawn), "REJECT H₀")
    assert record["pvalue_kind"].startswith("stage-wise") and record["reject"] is True
    assert len(record["looks"]) >= 1 and record["looks"][-1]["n_per_arm"] == int(drawn)
    assert record["reading"].startswith(f"Stopped after {drawn} of at most 100 samples per arm")
    next(b for b in at.button if b.key == "audit_result_html_prepare").click().run()
    report = sent["audit_result.html"].decode()
    assert f"Stopped after {drawn} of at most 100 samples per arm" in report and "· stage-wise p" in report
    assert "p ≤ α = 0.05: the outputs differ" not in report and "p &gt; α" not in report
    # α sets the boundaries before sampling: moving it makes the result out of date
    at.select_slider(key="one_alpha").set_value(0.01).run()
    assert any("Out of date" in w.value for w in at.warning)


def test_app_many_perturbations_sequential_mode(tmp_path, monkeypatch):
    from test_app import start

    at = start(tmp_path, monkeypatch, page="many_perturbations")
    at.selectbox(key="many_scenario").set_value("seasons_question").run()
    at.multiselect(key="many_chosen_seasons_question").set_value(["paraphrase_1", "mars"]).run()
    at.number_input(key="many_k").set_value(40).run()
    at.toggle(key="many_sequential").set_value(True).run()
    at.button(key="many_run").click().run()
    assert not at.exception and not at.error
    table = at.table[0].value
    assert list(table["perturbation"].str.contains("Mars")) == [False, True]
    assert table["samples per arm"].iloc[1] < 40
    assert any("Each test ran at α/m = 0.025" in c.value for c in at.caption)
