"""Tests of the RUT paper experiment: its protocol file, recording rows, pools on disk, the study and its record."""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core.present.rut_study import findings, recording_line, rut_study_record, summary_lines
from dbpa_core.paper.rut import PRINTED_TABLE_2A, rut_study
from dbpa_core.rut.collect import prompt_seed
from dbpa_core.rut.experiment import (EXPERIMENT_FILE, assemble_pools, complete_prompts, record_arm, rescore_pools,
                                      rut_experiment)
from dbpa_core.rut.mmd import PAD
from dbpa_core.rut.pools import load_rut_pools, save_rut_pools
from dbpa_core.rut.scoring import SCORES
from test_rut_power import synthetic_pools


def test_protocol_is_the_papers():
    config = rut_experiment()
    assert len(config.prompts) >= 100 and len(set(config.prompts)) == len(config.prompts)
    assert (config.temperature, config.max_tokens) == (0.5, 30)
    assert config.reference_answers >= 101  # m = 100 plus the target under H0
    kinds = {s.kind for s in config.substitutes}
    assert kinds == {"quantization", "jailbreak"}
    assert all((s.model is None) == (s.kind == "jailbreak") for s in config.substitutes)
    assert "CC0" in EXPERIMENT_FILE.read_text(encoding="utf-8")  # the prompts' licence ships with them


class FakeSampler:
    def __init__(self):
        self.calls = []

    def sample(self, prompt, n, *, system, temperature, max_tokens, seed, store):
        self.calls.append({"prompt": prompt, "n": n, "system": system, "temperature": temperature,
                           "max_tokens": max_tokens, "seed": seed})
        return [f"{prompt} answer {i} {system or ''}".strip() for i in range(n)]


class FakeScorer:
    """ReferenceScorer's batch interface: per answer its token ids and scores."""

    def __init__(self):
        self.calls = []

    def score_responses(self, prompt, responses):
        from types import SimpleNamespace

        self.calls.append(prompt)
        return [SimpleNamespace(tokens=tuple(len(w) for w in text.split()),
                                scores={s: float(len(text)) + k for k, s in enumerate(SCORES)})
                for text in responses]


def test_record_arm_scores_every_answer_after_the_user_prompt_alone():
    config = rut_experiment()
    sampler, scorer = FakeSampler(), FakeScorer()
    prompt = config.prompts[0]
    reference = record_arm(config, "reference", prompt, sampler=sampler, scorer=scorer)
    dan = record_arm(config, "dan", prompt, sampler=sampler, scorer=scorer)
    assert len(reference["texts"]) == config.reference_answers and len(dan["texts"]) == config.substitute_answers
    assert sampler.calls[0]["system"] is None and sampler.calls[1]["system"] == config.substitute("dan").system
    assert sampler.calls[0]["seed"] == prompt_seed(config.seed, prompt, "reference") != sampler.calls[1]["seed"]
    assert {c["temperature"] for c in sampler.calls} == {0.5} and {c["max_tokens"] for c in sampler.calls} == {30}
    assert set(scorer.calls) == {prompt}  # scored after the prompt, never the hidden system prompt
    assert dan["tokens"][0] == [len(w) for w in dan["texts"][0].split()]
    assert set(dan["scores"]) == set(SCORES)


def _rows(config, arms):
    sampler, scorer = FakeSampler(), FakeScorer()
    return [record_arm(config, arm, p, sampler=sampler, scorer=scorer) for p in config.prompts for arm in arms]


def test_pools_round_trip_through_the_file(tmp_path):
    config = rut_experiment()
    config = type(config)(config.prompts[:3], config.substitutes[:2], 0.5, 30, 6, 3, 0)
    rows = _rows(config, ["reference", *(s.name for s in config.substitutes)])
    pools = assemble_pools(config, rows, meta={"note": "test"})
    loaded = load_rut_pools(save_rut_pools(pools, tmp_path / "pools.npz"))
    assert loaded.prompts == config.prompts and list(loaded.substitutes) == [s.name for s in config.substitutes]
    assert loaded.meta == {"note": "test"}
    for name in ("reference", *loaded.substitutes):
        original = pools.reference if name == "reference" else pools.substitutes[name]
        got = loaded.reference if name == "reference" else loaded.substitutes[name]
        np.testing.assert_array_equal(got.tokens, original.tokens)
        assert (got.kind, got.label) == (original.kind, original.label)
        for s in SCORES:
            np.testing.assert_array_equal(got.scores[s], original.scores[s])
    assert (loaded.reference.tokens == PAD).any()  # shorter answers are padded
    with pytest.raises(ValueError, match="not recorded yet"):
        assemble_pools(config, rows[:-1])


def test_a_recording_cut_short_ships_only_the_prompts_with_every_arm(tmp_path):
    config = rut_experiment()
    config = type(config)(config.prompts[:4], config.substitutes[:2], 0.5, 30, 6, 3, 0)
    arms = ["reference", *(s.name for s in config.substitutes)]
    rows = _rows(config, arms)
    # The second prompt lacks a substitute, the fourth its reference: only the first and third are complete.
    cut = [r for r in rows if (r["arm"], r["prompt"]) not in {(arms[2], config.prompts[1]),
                                                              ("reference", config.prompts[3])}]
    kept = complete_prompts(config, cut)
    assert kept == (config.prompts[0], config.prompts[2])
    assert complete_prompts(config, rows) == config.prompts
    assert complete_prompts(config, []) == ()
    shorter = type(config)(kept, *(getattr(config, f) for f in ("substitutes", "temperature", "max_tokens",
                                                                "reference_answers", "substitute_answers", "seed")))
    pools = load_rut_pools(save_rut_pools(assemble_pools(shorter, cut), tmp_path / "cut.npz"))
    assert pools.prompts == kept and pools.reference.tokens.shape[:2] == (2, 6)


def test_missing_pools_file_says_how_to_record_it(tmp_path):
    with pytest.raises(ValueError, match="record_rut.py"):
        load_rut_pools(tmp_path / "none.npz")


def test_study_record_carries_the_reported_keys():
    pools = synthetic_pools(20, prompts=40, reference=30, answers=6, shifts={"q_far": 1.0, "j_near": 0.0})
    pools = type(pools)(pools.prompts, pools.reference,
                        {"q_far": pools.substitutes["q_far"],
                         "j_near": type(pools.substitutes["j_near"])("j_near", "jailbreak", "near",
                                                                     pools.substitutes["j_near"].tokens,
                                                                     pools.substitutes["j_near"].scores)})
    study = rut_study(pools=pools, n_trials=30, n_resamples=49, seed=1)
    record = rut_study_record(study)
    assert record["experiment"] == "rut"
    for row in record["substitutes"]:
        assert {"name", "kind", "q", "power", "power_auc"} <= set(row)
        assert set(row["power"]) == set(row["power_auc"]) == {"rut", "mmd", "ks"}
        assert len(row["power"]["rut"]) == len(row["q"]) == 11
    assert {r["kind"] for r in record["substitutes"]} == {"quantization", "jailbreak"}
    assert set(record["score_selection"]) == {"q_far", "j_near"}
    assert record["score_selection"]["q_far"]["best"] == "log_rank"
    printed = record["paper_printed"]
    assert len(printed) == len(PRINTED_TABLE_2A) and all(r["label"] == "paper (printed)" for r in printed)
    assert printed[0]["power_auc"] == {"rut": 0.392, "mmd": 0.214, "ks": 0.017} and "Table 2a" in printed[0]["source"]
    assert 0 <= record["default_audit"]["share_lower_bound"] <= 1
    assert any("RUT" in line for line in findings(study))
    assert any("paper (printed)" in line for line in summary_lines(study))
    again = rut_study_record(rut_study(pools=pools, n_trials=30, n_resamples=49, seed=1))
    assert [r["power_auc"] for r in again["substitutes"]] == [r["power_auc"] for r in record["substitutes"]]


def test_the_study_says_how_many_of_the_protocols_prompts_it_holds():
    pools = synthetic_pools(23, prompts=30, reference=25, answers=5)
    whole = rut_study(pools=pools, n_trials=10, n_resamples=19, seed=0)
    assert recording_line(whole).startswith("The recorded answers cover all 30 prompts")
    assert "n = 30 prompts (the paper's 100)" in recording_line(whole)
    cut = type(pools)(pools.prompts, pools.reference, pools.substitutes,
                      {"prompts": {"scored": 30, "protocol": 120}})
    study = rut_study(pools=cut, n_trials=10, n_resamples=19, seed=0)
    line = recording_line(study)
    assert "30 of the protocol's 120 prompts" in line and "cut short" in line
    assert rut_study_record(study)["recording"] == line and summary_lines(study)[0] == line
    assert study.settings["prompts"] == {"scored": 30, "protocol": 120}


def test_figures_draw_the_study_without_computing():
    from dbpa_core.present.rut_figures import power_auc_bars, power_curves, score_selection_chart, share_bound_curves

    pools = synthetic_pools(21, prompts=40, reference=30, answers=6)
    study = rut_study(pools=pools, n_trials=20, n_resamples=29, seed=2)
    curves = power_curves(study.curves)
    assert len(curves.data) == 3 * len(study.curves)  # three methods per substitute
    far = [t for t in curves.data if t.legendgroup == "rut"][1]
    np.testing.assert_array_equal(far.y, study.curves["far"].power["rut"])
    bars = power_auc_bars(study.curves)
    assert [t.x[1] for t in bars.data[:3]] == [study.curves["far"].power_auc[m] for m in ("rut", "mmd", "ks")]
    assert "nothing detected" in bars.data[3].name  # the α line explained in the legend, not over the bars
    # Lying down: upright, at 1024 px the Q8_0 group's labels ran into each other and onto the α line, and
    # the substitutes' names into their neighbours'; the α line under the bars' labels.
    assert all(t.orientation == "h" and t.textposition == "outside" for t in bars.data[:3])
    (line,) = bars.layout.shapes
    assert line.x0 == line.x1 == study.curves["far"].alpha and line.layer == "below"
    assert bars.layout.yaxis.autorange == "reversed"  # the first substitute on top, as in the table
    chart = score_selection_chart(study.selection)
    np.testing.assert_array_equal(chart.data[0].y, study.selection["near"].mean)
    bound = share_bound_curves(study.curves)
    np.testing.assert_array_equal(bound.data[1].y, study.curves["far"].mean_share_bound)


def test_reproduce_rut_on_the_command_line_writes_the_json(tmp_path, monkeypatch, capsys):
    import json

    from dbpa_core import __main__ as cli
    from dbpa_core.rut import pools as pools_module

    path = save_rut_pools(synthetic_pools(22, prompts=30, reference=25, answers=5), tmp_path / "pools.npz")
    monkeypatch.setattr(pools_module, "POOLS_FILE", path)
    out = tmp_path / "rut.json"
    assert cli.main(["reproduce", "rut", "--json", str(out), "--n-resamples", "49", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "paper (printed)" in printed and "Power AUC" in printed
    record = json.loads(out.read_text())
    assert record["experiment"] == "rut" and record["settings"]["seed"] == 3
    assert record["settings"]["n_trials"] == 500 and record["settings"]["n_resamples"] == 49
    row = record["substitutes"][0]
    assert {"name", "kind", "q", "power", "power_auc"} <= set(row) and set(row["power"]) == {"rut", "mmd", "ks"}
    assert "score_selection" in record and record["paper_printed"][0]["label"] == "paper (printed)"


def test_the_shipped_pools_hold_the_recording_and_the_study_reproduces_from_them():
    import json
    import lzma

    from dbpa_core.rut.pools import POOLS_FILE, TEXTS_FILE

    config = rut_experiment()
    pools = load_rut_pools(POOLS_FILE)
    held = pools.meta["prompts"]
    assert held["protocol"] == len(config.prompts) and held["scored"] == len(pools.prompts) >= 30
    assert pools.prompts == tuple(p for p in config.prompts if p in set(pools.prompts))  # the protocol's order
    assert list(pools.substitutes) == [s.name for s in config.substitutes]
    assert pools.reference.tokens.shape[:2] == (len(pools.prompts), config.reference_answers)
    assert all(a.tokens.shape[:2] == (len(pools.prompts), config.substitute_answers) for a in pools.substitutes.values())
    assert set(pools.meta["models"]) == {"reference", *(s.name for s in config.substitutes if s.model)}
    with lzma.open(TEXTS_FILE, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    assert len(rows) == len(pools.prompts) * (1 + len(pools.substitutes))
    # The study from the shipped file, twice with one seed: the same numbers (what the README and page print).
    first, again = (rut_study(pools=pools, n_trials=40, n_resamples=99, seed=3) for _ in range(2))
    for name, curves in first.curves.items():
        assert curves.power_auc == again.curves[name].power_auc
        for method in ("rut", "mmd", "ks"):
            np.testing.assert_array_equal(curves.power[method], again.curves[name].power[method])
    # The recording's plainest finding: a 2-bit requantization is far easier to catch than an 8-bit one.
    assert first.curves["smollm2-q2_k"].power_auc["rut"] > first.curves["smollm2-q8_0"].power_auc["rut"] + 0.3


def test_a_power_auc_reads_with_one_precision_in_the_bars_the_tables_and_the_findings():
    """Before, the bars said 0.87 and 0.05 where the table said 0.872 and 0.0514, and one column mixed "0.88"
    with "0.882" (three significant digits, trailing zeros dropped)."""
    import re

    from dbpa_core.present.formatting import people_frame
    from dbpa_core.present.rut_figures import power_auc_bars
    from dbpa_core.present.rut_study import power_auc_frame, selection_frame

    pools = synthetic_pools(21, prompts=40, reference=30, answers=6, shifts={"far": 1.0, "near": 0.0})
    study = rut_study(pools=pools, n_trials=20, n_resamples=29, seed=2)
    frame = power_auc_frame(study)
    # 0.05 with a zero to drop, and a value below 0.1: format_number wrote "0.05" and "0.0514"
    frame.loc[0, "RUT power AUC"], frame.loc[1, "RUT power AUC"] = 0.05, 0.0514
    shown = people_frame(frame)
    numbers = [c for c in frame.columns if c.endswith("power AUC") or c == "± MC error"]
    assert all(re.fullmatch(r"\d\.\d{3}", cell) for c in numbers for cell in shown[c]), shown[numbers]
    assert list(shown["RUT power AUC"][:2]) == ["0.050", "0.051"]
    table = people_frame(power_auc_frame(study))
    bars = power_auc_bars(study.curves)
    for trace, method in zip(bars.data[:3], ("RUT", "MMD", "KS")):
        assert list(trace.text) == list(table[f"{method} power AUC"])  # the bars say what the table says
    selection = people_frame(selection_frame(study))
    assert all(re.fullmatch(r"0\.\d{3}|1\.000", cell) for c in selection.columns if c.startswith("AUROC")
               for cell in selection[c])
    line = next(f for f in findings(study) if "runs from" in f)
    assert re.search(r"runs from \d\.\d{3} \(.*\) to \d\.\d{3} \(", line), line


def test_a_tie_reads_in_plain_names_on_one_line_and_in_ids_in_the_json():
    from dbpa_core.present.rut_study import leader_text, power_auc_frame

    pools = synthetic_pools(21, prompts=40, reference=30, answers=6, shifts={"far": 1.0, "near": 0.0})
    study = rut_study(pools=pools, n_trials=20, n_resamples=29, seed=2)
    ids, plain = leader_text(study, "far"), leader_text(study, "far", plain=True)
    assert plain == ids.upper().replace(" ≈ ", "\u00a0≈\u00a0")  # "RUT ≈ KS" never broken after the "≈"
    highest = power_auc_frame(study).set_index("substitute")["highest"]
    assert highest["far"] == "RUT\u00a0≈\u00a0MMD\u00a0≈\u00a0KS"  # a three-way tie at 20 audits per q
    # Every method at α against "near" (power AUC 0.06–0.08): no method "leads" or "ties" there, none detects it
    assert highest["near"] == "none (power\u00a0≈\u00a0α)" and leader_text(study, "near") == "none"
    # Sentences and the JSON that carries them use ordinary spaces; the tie is still named in words
    lines = findings(study)
    assert not any("\u00a0" in line for line in lines) and any("RUT ≈ MMD ≈ KS" in line for line in lines)
    assert "1 tied with another method within Monte Carlo error, 1 detected by no method." in lines[0], lines[0]
    assert "ties: far (RUT ≈ MMD ≈ KS)." in lines[1] and "near" not in lines[1], lines[1]
    # The lead is claimed for this run only, with what its MC error leaves out (issue 42: it did not hold on seeds).
    from dbpa_core.present.rut_study import RUN_ERROR

    assert lines[1].startswith(f"Highest power AUC in this run, beyond {RUN_ERROR}: ")
    assert "reuses the same pool of prompts" in RUN_ERROR
    from dbpa_core.rut.pool_error import POOL_FINDING

    assert lines[2] == POOL_FINDING and "not against the requantizations" in POOL_FINDING
    assert "Every method fails" in lines[-1] and "against near" in lines[-1]
    from dbpa_core.present.rut_study import REFERENCE_BITS

    assert lines[-1].endswith(REFERENCE_BITS) and "re-encodes a 4-bit model" in REFERENCE_BITS
    # The paper's 8-bit rows read as printed ("~0.05"), not at our three decimals ("≈ 0.050")
    from dbpa_core.present.rut_study import printed_frame

    printed = printed_frame(study)
    cells = [c for column in printed.columns if "power AUC" in column for c in printed[column]]
    assert "~0.05" in cells and "~0.00" in cells and not any(c.startswith("≈") for c in cells)


def test_rescoring_replaces_scores_only_and_refuses_other_tokens():
    """rescore_pools: the answers' scores recomputed from their texts, tokens and meta kept; a prompt not asked for
    keeps its scores; an answer whose token ids differ, or a prompt with another number of texts, is refused."""
    config = rut_experiment()
    config = type(config)(config.prompts[:3], config.substitutes[:2], 0.5, 30, 6, 3, 0)
    rows = _rows(config, ["reference", *(s.name for s in config.substitutes)])
    pools = assemble_pools(config, rows, meta={"note": "test"})
    texts = {(row["arm"], row["prompt"]): row["texts"] for row in rows}
    from types import SimpleNamespace

    class Doubling(FakeScorer):  # other scores, the same tokens
        def score_responses(self, prompt, responses):
            return [SimpleNamespace(tokens=r.tokens, scores={k: 2 * v for k, v in r.scores.items()})
                    for r in super().score_responses(prompt, responses)]

    again = rescore_pools(pools, texts, Doubling(), prompts=[config.prompts[1]])
    for old, new in zip([pools.reference, *pools.substitutes.values()], [again.reference, *again.substitutes.values()]):
        assert np.array_equal(old.tokens, new.tokens)
        for score in SCORES:
            assert np.array_equal(new.scores[score][[0, 2]], old.scores[score][[0, 2]])
            assert np.array_equal(new.scores[score][1], 2 * old.scores[score][1])
    assert again.meta == {"note": "test"}
    changed = dict(texts)
    key = ("reference", config.prompts[0])
    changed[key] = ["one two three"] + changed[key][1:]
    with pytest.raises(ValueError, match="reference answer 0 .* token ids differ"):
        rescore_pools(pools, changed, FakeScorer())
    changed[key] = changed[key][1:]
    with pytest.raises(ValueError, match="answer counts"):
        rescore_pools(pools, changed, FakeScorer())


def test_the_shipped_pools_hold_todays_scores():
    """The shipped pools were scored by the scorer live audits use (rescored from their texts when the scorer
    changed): 32 of their answers, scored again, give the shipped token ids (rescore_pools raises otherwise)
    and the shipped scores, bit for bit.

    The 32: on 4 prompts, 2 reference answers and 1 of each substitute's (drawn once with a fixed seed); one
    prompt is the one holding the pools' longest answer (59 tokens after retokenizing), and that answer is
    among them.  Why so few suffice: a changed scorer moves every answer.  Each of an answer's ≈ 30 positions
    reads all 49,152 logits of a full forward pass, and every change that moved numbers so far (a kernel,
    the attention path, how tokens are split into forward steps, the chat template, a statistic's formula)
    moved the last bits of every position; 32 answers × 30 positions × 5 scores compared bit for bit catch it.
    The answers are scored 8 to a step where the recording scored 206, so a score that came to depend on its
    batch shows too.  What only a full rescoring would show is a tokenizer change that touches the text of
    answers left out; one prompt's 206 answers (32 s of CI) covered 0.8 % of them, these 32 cover 0.13 %.
    """
    from dbpa_core.rut.pools import POOLS_FILE, TEXTS_FILE, Arm, RUTPools, load_rut_texts
    from dbpa_core.rut.scoring import ReferenceScorer

    pools, texts = load_rut_pools(POOLS_FILE), load_rut_texts(TEXTS_FILE)
    arms = [pools.reference, *pools.substitutes.values()]
    lengths = [np.count_nonzero(arm.tokens != PAD, axis=2) for arm in arms]
    longest = max(range(len(arms)), key=lambda a: lengths[a].max())
    i_long, n_long = np.unravel_index(lengths[longest].argmax(), lengths[longest].shape)
    rng = np.random.default_rng(46)
    rows = [int(i_long), *rng.choice(np.setdiff1d(np.arange(len(pools.prompts)), [i_long]), 3, replace=False)]
    picks = {arm.name: [sorted(rng.choice(arm.n_answers, 2 if arm is pools.reference else 1, replace=False))
                        for _ in rows] for arm in arms}
    if n_long not in picks[arms[longest].name][0]:
        picks[arms[longest].name][0][-1] = int(n_long)
    # The chosen answers as pools of their own, their scores blank: rescore_pools has to fill every one.
    chosen = [Arm(arm.name, arm.kind, arm.label, np.stack([arm.tokens[i, n] for i, n in zip(rows, picks[arm.name])]),
                  {s: np.full((len(rows), len(picks[arm.name][0])), np.nan) for s in SCORES}) for arm in arms]
    prompts = tuple(pools.prompts[i] for i in rows)
    subset = RUTPools(prompts, chosen[0], {a.name: a for a in chosen[1:]}, pools.meta)
    answers = {(arm.name, p): [texts[arm.name, p][n] for n in picked]
               for arm in arms for p, picked in zip(prompts, picks[arm.name])}
    assert sum(map(len, answers.values())) == 32
    assert max(np.count_nonzero(a.tokens != PAD, axis=-1).max() for a in chosen) == lengths[longest].max()
    again = rescore_pools(subset, answers, ReferenceScorer())
    for arm, scored in zip(arms, [again.reference, *again.substitutes.values()]):
        for score in SCORES:
            shipped = np.stack([arm.scores[score][i, n] for i, n in zip(rows, picks[arm.name])])
            np.testing.assert_array_equal(scored.scores[score], shipped, err_msg=f"{arm.name} {score}")
    assert pools.meta["rescored"]["answers"] == 24_720
    assert "one token per forward step" in pools.meta["protocol"]["scoring"]
