"""A SPEC's ``explain`` is computed by the runner (issue 41): the command line and the app read it from the
result, and a request that does not ask for it keeps the key it always had."""

from __future__ import annotations

import dataclasses

from dbpa_core.audit import AuditRequest, SamplerConfig, run
from dbpa_core.audit.identity import REQUEST_VERSION, request_digest
from dbpa_core.audit.spec import parse_spec
from dbpa_core.data.scenarios import load_scenarios
from dbpa_core.stats.explain import explain_change

SCENARIO = load_scenarios()["seasons_question"]


def request(**settings) -> AuditRequest:
    return AuditRequest.from_scenario(SCENARIO, ["mars", "paraphrase_1"], sampler=SamplerConfig(), k=8,
                                      n_resamples=99, seed=3, **settings)


def test_a_request_without_explain_keeps_its_key_and_settings():
    plain = request()
    before = {"request": "AuditRequest", "version": REQUEST_VERSION, **dataclasses.asdict(plain)}
    del before["explain_fdr"]  # the description as it was before the field existed
    assert plain.key == request_digest(before) and "explain" not in plain.settings()
    asked = request(explain_fdr=0.1)
    assert asked.key != plain.key and asked.settings()["explain"] == {"fdr": 0.1}


def test_run_explains_each_perturbation_as_the_command_line_did(minilm):
    family = run(request(explain_fdr=0.2), embedder=minilm)
    assert len(family.explanations) == len(family.results) == 2
    for result, explanation in zip(family.results, family.explanations, strict=True):
        # what __main__ computed before the runner did: the request's B and seed, the SPEC's fdr
        direct = explain_change(result.original.texts, result.perturbed.texts, result.original.embeddings,
                                result.perturbed.embeddings, fdr=0.2, n_resamples=99, rng=3)
        assert [t.qvalue for t in explanation.themes] == [t.qvalue for t in direct.themes]
        assert explanation.fdr == 0.2
    assert family.recorrected("holm", 0.01).explanations is family.explanations
    assert run(request(), embedder=minilm).explanations is None


def test_a_specs_explain_reaches_the_request():
    spec = parse_spec({"sampler": {"backend": "simulated"}, "scenario": "seasons_question",
                       "perturbations": ["mars"], "k": 6, "explain": {"fdr": 0.05}})
    assert spec.request.explain_fdr == 0.05
    assert parse_spec({"sampler": {"backend": "simulated"}, "scenario": "seasons_question",
                       "perturbations": ["mars"], "k": 6}).request.explain_fdr is None
