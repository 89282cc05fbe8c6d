"""Tests of dbpa_core.data.scenarios: packaged scenarios and clear errors for bad files."""

from __future__ import annotations

import copy

import pytest
import yaml

from dbpa_core.data.assets import SCENARIO_DIR
from dbpa_core.data.scenarios import ScenarioError, load_scenario, load_scenarios, parse_scenario

SCENARIOS = load_scenarios()


def test_packaged_scenarios():
    assert {"cvd_nice", "customer_support", "seasons_question"} <= set(SCENARIOS)
    cvd = SCENARIOS["cvd_nice"]
    assert cvd.prompt.startswith("Please generate cardiovascular disease (CVD) guidelines")
    personas = [p for p in cvd.perturbations if p.group == "persona"]
    assert len(personas) == 8
    assert {p.kind for p in cvd.perturbations} == {"control", "target"}
    for scenario in SCENARIOS.values():
        assert any(p.is_target for p in scenario.perturbations) and any(not p.is_target for p in scenario.perturbations)


def test_transforms_produce_the_prompt_as_sent():
    cvd = SCENARIOS["cvd_nice"]
    assert cvd.apply("persona_comedian")[0] == "Act as a comedian. " + cvd.prompt
    assert "BMI of 31" in cvd.apply("bmi_plus_one")[0] and "BMI of 30" not in cvd.apply("bmi_plus_one")[0]
    assert cvd.apply("pad_4")[0].count("repainted") == 4
    assert cvd.apply("pad_16")[0].startswith(cvd.prompt)
    support = SCENARIOS["customer_support"]
    prompt, system = support.apply("terse_system")
    assert prompt == support.prompt and system != support.system


def test_persona_combined_with_padding_reaches_the_length_asked():
    """Appendix C.1 with a persona: the persona prefix, then padding to ≈100/300/900 tokens (4 characters each)."""
    cvd = SCENARIOS["cvd_nice"]
    sentence = len(" The clinic waiting room was repainted last spring.")
    for tokens in (100, 300, 900):
        prompt, _ = cvd.apply(f"comedian_pad_{tokens}")
        assert prompt.startswith("Act as a comedian. " + cvd.prompt)
        assert 0 <= len(prompt) - 4 * tokens < sentence
    assert cvd.apply("comedian_pad_900")[0].count("repainted") > cvd.apply("comedian_pad_300")[0].count("repainted")


def test_ground_truth():
    for scenario in SCENARIOS.values():
        for p in scenario.perturbations:
            effect = scenario.true_effect(p)
            assert (effect == 0) if not p.is_target else (0.2 < effect <= 1), (scenario.id, p.id)


def _data():
    return yaml.safe_load((SCENARIO_DIR / "seasons_question.yaml").read_text())


def _broken(edit):
    data = copy.deepcopy(_data())
    edit(data)
    return data


@pytest.mark.parametrize(("edit", "match"), [
    (lambda d: d.pop("template"), "`template` is required"),
    (lambda d: d.update(colour="red"), "`colour` is not a scenario key"),
    (lambda d: d.update(template="What about {moon}?"), r"`template` uses field \{moon\}"),
    (lambda d: d["facets"]["axial_tilt"].update(weight=-1), "`facets.axial_tilt.weight` must be a number >= 0"),
    (lambda d: d["facets"]["axial_tilt"].update(phrasings=[]), "`facets.axial_tilt.phrasings`"),
    (lambda d: d["perturbations"][0].update(kind="maybe"), "`perturbations.paraphrase_1.kind` must be"),
    (lambda d: d["perturbations"][0].update(transform={"type": "rotate"}), r"`perturbations.paraphrase_1.transform.type`"),
    (lambda d: d["perturbations"][0].update(transform={"type": "prefix"}), r"transform.text` is required"),
    (lambda d: d["perturbations"][0].update(simulated_effect={"mars": 2.0}), "must be empty for a control"),
    (lambda d: d["perturbations"][4].pop("simulated_effect"), "is required for a target"),
    (lambda d: d["perturbations"][4].update(simulated_effect={"pluto": 2}), "is not a facet"),
    (lambda d: d["perturbations"][1].update(id="paraphrase_1"), "repeats the id"),
    (lambda d: d["perturbations"][0].update(transform={"type": "replace_field", "field": "moon", "value": 1}),
     "names 'moon', which is not in `fields`"),
    (lambda d: d["perturbations"][0].update(transform={"type": "paraphrase", "template": "What causes the seasons on {planet}?"}),
     "leaves the prompt unchanged"),
    (lambda d: d["perturbations"][3]["transform"].update(sentences=0), "sentences` must be a positive integer"),
    (lambda d: d["perturbations"][0].update(transform={"type": "persona_pad", "prefix": "Act as a child. ",
                                                       "text": "Filler.", "tokens": 0}),
     "transform.tokens` must be a positive integer"),
])
def test_bad_scenarios_name_file_and_field(edit, match):
    with pytest.raises(ScenarioError, match=match) as info:
        parse_scenario(_broken(edit), source="broken.yaml")
    assert str(info.value).startswith("broken.yaml: ")


def test_bad_files(tmp_path):
    (tmp_path / "bad.yaml").write_text("id: [unclosed")
    with pytest.raises(ScenarioError, match=r"bad.yaml, line 1, column \d+: not valid YAML"):
        load_scenario(tmp_path / "bad.yaml")
    with pytest.raises(ScenarioError, match="file not found"):
        load_scenario(tmp_path / "missing.yaml")
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(_data()))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(_data()))
    with pytest.raises(ScenarioError, match="b.yaml: `id` 'seasons_question' is also used by a.yaml"):
        load_scenarios(tmp_path)


def test_unknown_perturbation():
    with pytest.raises(KeyError, match="no perturbation 'nope'"):
        SCENARIOS["cvd_nice"].apply("nope")


def test_figs_1_2_design_extends_the_cvd_patient():
    """cvd_nice_risk (paper §4.2): the cvd_nice prompt, 8 controls and 8 targets, nothing repeated in its file."""
    risk, cvd = SCENARIOS["cvd_nice_risk"], SCENARIOS["cvd_nice"]
    assert risk.prompt == cvd.prompt and risk.facets == cvd.facets
    assert "template" not in yaml.safe_load((SCENARIO_DIR / "cvd_nice_risk.yaml").read_text())
    controls = [p for p in risk.perturbations if not p.is_target]
    targets = [p for p in risk.perturbations if p.is_target]
    assert len(controls) == 8 and len(targets) == 8
    # controls change the name or add a fact outside QRISK3; targets cross a NICE threshold
    assert {p.group for p in controls} == {"name", "outside the risk score"}
    assert {p.group for p in targets} == {"cholesterol", "diabetes", "blood pressure"}
    assert "total cholesterol is 9.5 mmol/L" in risk.apply("cholesterol_refer")[0]
    assert risk.apply("married")[0] == cvd.prompt + " He is married and lives with his wife."


def test_extends_errors_name_the_file_and_the_fix(tmp_path):
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(_data()))
    child = {"id": "child", "title": "Child", "extends": "base", "perturbations": _data()["perturbations"]}
    (tmp_path / "child.yaml").write_text(yaml.safe_dump(child))
    loaded = load_scenarios(tmp_path)
    assert loaded["child"].prompt == loaded["seasons_question"].prompt
    (tmp_path / "child.yaml").write_text(yaml.safe_dump({**child, "extends": "nowhere"}))
    with pytest.raises(ScenarioError, match=r"child.yaml: `extends` must name a scenario file beside it"):
        load_scenario(tmp_path / "child.yaml")
    (tmp_path / "grandchild.yaml").write_text(yaml.safe_dump({**child, "id": "grandchild", "extends": "child"}))
    (tmp_path / "child.yaml").write_text(yaml.safe_dump(child))
    with pytest.raises(ScenarioError, match="extends none"):
        load_scenario(tmp_path / "grandchild.yaml")
