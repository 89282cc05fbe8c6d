"""The rank-based uniformity audit as a request: is this API serving the model it claims? (Zhu et al., ICLR 2026)

A :class:`RUTRequest` names where the answers come from — the shipped
recorded pools (``source="recorded"``: a ``substitute`` serving a share ``q``
of the answers, the paper's §5 simulated substitution) or models asked now
(``source="live"``: a ``reference`` sampler, a ``target`` sampler or
``uploaded`` target responses) — and the audit's n prompts, m reference
answers per prompt, the score, the uniformity ``test``, α and the seed.
:func:`run` is the one path from it to a :class:`RUTAuditResult`, for
``python -m dbpa_core rut SPEC.yaml`` and the "Is this API the model it
claims?" page alike (:data:`dbpa_core.requests.dispatch.RUNNERS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .._validation import (MAX_TOKENS, TOKENS_WHY, check_choice, check_n_resamples, check_positive_int,
                           check_probability, check_prompt_text, check_temperature)
from ..audit.identity import Identified, test_seed
from ..audit.configs import SamplerConfig

SOURCES = ("recorded", "live")
TESTS = ("cvm", "ks")
#: The most prompts and reference answers a live audit asks for (each is a generation and a scoring pass).
MAX_LIVE_PROMPTS, MAX_LIVE_M = 500, 200


@dataclass(frozen=True)
class RUTRequest(Identified):
    """Everything a RUT audit's result depends on; frozen, hashable, free of credentials.

    Attributes
    ----------
    source : {"recorded", "live"}
    substitute, q
        ``recorded``: the recorded substitute serving each answer with
        probability q ("reference": the claimed model itself, q = 0).
    reference, target : SamplerConfig or None
        ``live``: the claimed model (default the local SmolLM2) and the system
        under audit (None with ``uploaded``).
    target_system, target_temperature
        How a *local* stand-in target is asked (how it imitates a substitute);
        any other target is asked exactly as the reference (no system prompt,
        :data:`~dbpa_core.rut.collect.REFERENCE_TEMPERATURE`).
    uploaded : tuple of (prompt, response)
        Target responses collected elsewhere.
    prompts : tuple of str
        ``live``: the prompts (default: the uploaded ones, or the shipped RUT prompts), the first ``n`` kept.
    n, m : int
        Prompts, and reference answers per prompt.
    score, test, alpha
        The reference model's score of an answer, the ranks' uniformity test
        ("cvm": Cramér–von Mises, the paper's; "ks"), and the level.
    n_resamples : int
        ``recorded``: re-splits of the Hamming-kernel MMD run beside the RUT.
    seed : int
    max_tokens : int
        ``live``: the answers' length.
    """

    source: str = "recorded"
    substitute: str = "smollm2-q2_k"
    q: float = 0.5
    reference: SamplerConfig | None = None
    target: SamplerConfig | None = None
    target_system: str = ""
    target_temperature: float | None = None
    uploaded: tuple[tuple[str, str], ...] = ()
    prompts: tuple[str, ...] = ()
    n: int = 100
    m: int = 100
    score: str = "log_rank"
    test: str = "cvm"
    alpha: float = 0.05
    n_resamples: int = 1000
    seed: int = 0
    max_tokens: int = 40

    def __post_init__(self):
        from ..rut.collect import REFERENCE_TEMPERATURE, rut_prompts
        from ..rut.scoring import SCORES

        set_ = object.__setattr__
        source = check_choice(self.source, "source", SOURCES)
        set_(self, "source", source)
        set_(self, "score", check_choice(self.score, "score", SCORES))
        set_(self, "test", check_choice(self.test, "test", TESTS))
        set_(self, "alpha", check_probability(self.alpha, "alpha"))
        set_(self, "n_resamples", check_n_resamples(self.n_resamples))
        set_(self, "seed", check_positive_int(self.seed, "seed", minimum=0))
        set_(self, "max_tokens", check_positive_int(self.max_tokens, "max_tokens", maximum=MAX_TOKENS,
                                                    why=TOKENS_WHY))
        set_(self, "uploaded", tuple((str(p), str(t)) for p, t in self.uploaded))
        if source == "recorded":
            set_(self, "n", check_positive_int(self.n, "n", minimum=2))
            set_(self, "m", check_positive_int(self.m, "m", minimum=2))
            set_(self, "substitute", str(self.substitute))
            q = 0.0 if self.substitute == "reference" else self.q
            set_(self, "q", check_probability(q, "q", open_low=False, open_high=False))
            for name in ("reference", "target", "uploaded", "prompts", "target_system"):
                if getattr(self, name):
                    raise ValueError(f"`{name}` is for a live audit (source: live); a recorded audit draws its "
                                     "answers from the shipped pools.")
            return
        reference = self.reference if self.reference is not None else SamplerConfig("local")
        set_(self, "reference", reference.instance)
        set_(self, "m", check_positive_int(self.m, "m", maximum=MAX_LIVE_M, why="each is a generation"))
        if self.uploaded and self.target is not None:
            raise ValueError("`target` and `uploaded` both give the target's answers; keep one.")
        if not self.uploaded and self.target is None:
            raise ValueError("`target` is missing: name the sampler under audit (e.g. {backend: openai, model: …, "
                             "base_url: …}) or give `uploaded` responses.")
        local_target = self.target is not None and self.target.backend == "local"
        if not local_target and (self.target_system or self.target_temperature not in (None, REFERENCE_TEMPERATURE)):
            raise ValueError("`target_system` and `target_temperature` are only for a local stand-in target: an "
                             "audited endpoint is asked exactly as the claimed model is (anything else sent to it "
                             "would change its answers and make an honest API fail).")
        temperature = REFERENCE_TEMPERATURE if self.target_temperature is None else self.target_temperature
        set_(self, "target_temperature", check_temperature(temperature, "target_temperature"))
        set_(self, "target_system", check_prompt_text(str(self.target_system or ""), "target_system"))
        if self.target is not None:
            set_(self, "target", self.target.instance)
        prompts = tuple(self.prompts) or tuple(p for p, _ in self.uploaded) or tuple(rut_prompts())
        n = check_positive_int(self.n, "n", minimum=2, maximum=MAX_LIVE_PROMPTS, why="each is m + 1 generations")
        if len(prompts) < 2:
            raise ValueError("`prompts` must hold at least 2 prompts.")
        for i, prompt in enumerate(prompts):
            check_prompt_text(prompt, f"prompts[{i}]")
        answered = dict(self.uploaded)
        if self.uploaded and (missing := [p for p in prompts[:n] if p not in answered]):
            raise ValueError(f"`uploaded` has no target response to {missing[0]!r}: give one response per prompt.")
        set_(self, "prompts", prompts[:n])
        set_(self, "n", len(prompts[:n]))

    @classmethod
    def from_mapping(cls, mapping: dict, *, base: Path | None = None) -> tuple[str, RUTRequest]:
        """``(name, request)`` of a ``dbpa rut`` SPEC (:mod:`dbpa_core.requests.specs`); ``uploaded`` is a
        JSONL file of ``{prompt, text}`` rows, relative to the SPEC's folder."""
        from .specs import check_keys, sampler_config, spec_name

        allowed = {"name", *(f for f in cls.__dataclass_fields__)}
        values = check_keys(mapping, allowed)
        name = spec_name(values, f"rut-{values.get('source', 'recorded')}")
        values.pop("name", None)
        for role in ("reference", "target"):
            if values.get(role) is not None:
                values[role] = sampler_config(values[role], role)
        if isinstance(values.get("uploaded"), str):
            from ..data.uploads import read_target_responses

            path = (base or Path()) / values["uploaded"]
            if not path.is_file():
                raise ValueError(f"`uploaded`: {path} is not a file (JSONL, one {{prompt, text}} per line).")
            values["uploaded"] = tuple(read_target_responses(path.read_bytes(), path.name).items())
        if isinstance(values.get("prompts"), list):
            values["prompts"] = tuple(values["prompts"])
        return name, cls(**values)

    # ------------------------------------------------------------ identity

    def tests_only(self) -> RUTRequest:
        """The request without α, which only reads the p-value (a cache of results keys on this)."""
        return replace(self, alpha=0.05)

    def settings(self) -> dict:
        """The settings a report records (JSON-ready; never a secret)."""
        common = {"source": self.source, "n": self.n, "m": self.m, "score": self.score, "test": self.test,
                  "alpha": self.alpha, "seed": self.seed}
        if self.source == "recorded":
            return {**common, "substitute": self.substitute, "q": self.q, "n_resamples": self.n_resamples}
        return {**common, "reference": self.reference.as_mapping(),
                "target": self.target.as_mapping() if self.target is not None else "uploaded responses",
                "target_system": self.target_system, "target_temperature": self.target_temperature,
                "max_tokens": self.max_tokens}


@dataclass(frozen=True, eq=False)
class RUTAuditResult:
    """A RUT audit's result: the test of the ranks, the scores it ran on, and (recorded) the MMD beside it.

    ``n_substituted`` is the truth a recorded audit knows (how many target answers came from the substitute).
    """

    request: RUTRequest = field(repr=False)
    rut: object  # RUTResult
    scores: object = field(repr=False)  # AuditScores
    mmd: object = None  # MMDResult (recorded audits)
    n_substituted: int | None = None

    @property
    def statistic(self) -> float:
        return float(self.rut.statistic)

    @property
    def pvalue(self) -> float:
        return float(self.rut.pvalue)

    @property
    def change_detected(self) -> bool:
        """p ≤ α (the reports' decision, worded by :func:`dbpa_core.present.readings.decision`)."""
        return self.pvalue <= self.request.alpha


def _recorded(request: RUTRequest, pools) -> RUTAuditResult:
    from ..rut.data import AuditScores
    from ..rut.power import recorded_audit

    if pools is None:
        from ..rut.pools import load_rut_pools

        pools = load_rut_pools()
    substitute = request.substitute
    if substitute != "reference" and substitute not in pools.substitutes:
        raise ValueError(f"`substitute` must be 'reference' or one of {', '.join(pools.substitutes)}; "
                         f"got {substitute!r}.")
    # The claimed model itself: any substitute's stream at q = 0 (the page's "reference" target).
    name = next(iter(pools.substitutes)) if substitute == "reference" else substitute
    recorded = recorded_audit(pools, name, request.q, n_prompts=request.n, m=request.m, score=request.score,
                              n_resamples=request.n_resamples, seed=test_seed(request), method=request.test)
    audit = recorded.audit
    scores = AuditScores.from_rows(audit.prompts, audit.target_scores, audit.reference_scores)
    return RUTAuditResult(request, recorded.rut, scores, recorded.mmd, recorded.n_substituted)


def run(request: RUTRequest, *, store=None, progress=None, sampler_for=None, scorer=None, pools=None
        ) -> RUTAuditResult:
    """Run a :class:`RUTRequest`.

    Parameters
    ----------
    request : RUTRequest
    store : SampleStore, optional
        Live answers are reused from it and written to it (an interrupted audit resumes).
    progress : callable(RunUpdate), optional
        Told after each prompt of a live audit.
    sampler_for : callable(SamplerConfig) -> Sampler, optional
        Default :func:`~dbpa_core.audit.runner.build_sampler` (keys from the environment).
    scorer : ReferenceScorer, optional
        Scores every answer under the reference model (default: the packaged SmolLM2).
    pools : RUTPools, optional
        The recorded pools (default the shipped ones).

    Returns
    -------
    RUTAuditResult
    """
    from ..rut.uniformity import rank_uniformity_test

    if request.source == "recorded":
        return _recorded(request, pools)
    from ..rut.collect import live_rut_scores
    from ..audit.arms import RunUpdate
    from ..audit.runner import build_sampler

    sampler_for = sampler_for or build_sampler
    reference = sampler_for(request.reference)
    target = None
    if request.target is not None:
        target = reference if request.target == request.reference else sampler_for(request.target)
    if scorer is None:
        from ..rut.scoring import ReferenceScorer

        scorer = ReferenceScorer()
    report = None if progress is None else (lambda done, total: progress(RunUpdate("sampling", "prompts", done,
                                                                                   total)))
    scores = live_rut_scores(list(request.prompts), reference=reference, target=target, scorer=scorer,
                             score=request.score, m=request.m, seed=test_seed(request),
                             system=request.target_system or None, temperature=request.target_temperature,
                             max_tokens=request.max_tokens, uploaded=dict(request.uploaded) or None, store=store,
                             progress=report)
    result = rank_uniformity_test(scores.target_scores, scores.reference_scores, method=request.test,
                                  rng=np.random.default_rng(test_seed(request)))
    return RUTAuditResult(request, result, scores)
