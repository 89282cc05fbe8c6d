"""The OT stability search as a request: how costly a shift does it take to make a model fail this often?

A :class:`StabilityRequest` names the searches (the shipped recorded ones,
or a live search of ``items`` on a ``target`` model and ``compare`` recorded
targets, with an ``assistant`` proposing rewrites and a ``judge`` of "same
meaning"), the perturbation cost, and the point (r, θ) at which the criterion
R(β, r) is read with θ1 = θ2 = θ (Liu, Li, Cui & Blanchet, §2; Figure 1's
headline is r = 50 %, θ = 2).  :func:`run` is the one path from it to a
:class:`StabilityAuditResult`, for ``python -m dbpa_core stability SPEC.yaml``
and the Stability page alike (:data:`dbpa_core.requests.dispatch.RUNNERS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_positive_float, check_positive_int, check_probability
from ..audit.identity import Identified, test_seed
from ..audit.configs import EmbedderConfig, SamplerConfig

SOURCES = ("recorded", "live")
ASSISTANTS = ("local", "endpoint")
JUDGES = ("embedding", "llm")
#: Items a live search takes at most (each costs the target up to K × rounds answers).
MAX_ITEMS = 200


def target_name(config: SamplerConfig) -> str:
    """The label of a live run's own target in tables, figures and reports."""
    return f"{config.model} (your endpoint)" if config.backend == "openai" else "local SmolLM2 (sidebar)"


@dataclass(frozen=True)
class StabilityRequest(Identified):
    """Everything a stability audit's result depends on; frozen, hashable, free of credentials.

    Attributes
    ----------
    source : {"recorded", "live"}
    cost : str
        The perturbation cost (:data:`~dbpa_core.stability.criterion.COSTS`; eq. (1) by default).
    r, theta : float
        Where R(β, r) is read for each target: the risk threshold and θ1 = θ2 = θ.
    n_resamples, seed
        The paired bootstrap of the items behind each ranking's support (0: none).
    task, items
        ``live``: the task ("qa" or "secret") and its items (:class:`~dbpa_core.stability.tasks.Item`).
    target, target_system
        ``live``: the model under evaluation and its own system prompt (after the item's).
    compare : tuple of str
        ``live``: recorded targets (:data:`~dbpa_core.stability.runs.TARGETS`) searched on the same items.
    assistant : {"local", "endpoint"}
        Who proposes rewrites: the packaged SmolLM2 or the target's endpoint.
    judge : {"embedding", "llm"}
        "Same meaning": calibrated embedding similarity, or the endpoint answering yes / no.
    embedder : EmbedderConfig
    n_candidates, depth : int
        Rewrites per round K and rounds of the search.
    """

    source: str = "recorded"
    cost: str = "paper"
    r: float = 0.5
    theta: float = 2.0
    n_resamples: int = 200
    seed: int = 0
    task: str = ""
    items: tuple = ()
    target: SamplerConfig | None = None
    target_system: str = ""
    compare: tuple[str, ...] = ()
    assistant: str = "local"
    judge: str = "embedding"
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    n_candidates: int = 3
    depth: int = 2

    def __post_init__(self):
        from ..stability.criterion import COSTS
        from ..stability.runs import TARGETS
        from ..stability.tasks import TASKS

        set_ = object.__setattr__
        source = check_choice(self.source, "source", SOURCES)
        set_(self, "source", source)
        set_(self, "cost", check_choice(self.cost, "cost", tuple(COSTS)))
        set_(self, "r", check_probability(self.r, "r"))
        set_(self, "theta", check_positive_float(self.theta, "theta"))
        set_(self, "n_resamples", check_positive_int(self.n_resamples, "n_resamples", minimum=0, maximum=100_000,
                                                     why="each resample re-solves every target's criterion"))
        set_(self, "seed", check_positive_int(self.seed, "seed", minimum=0))
        if source == "recorded":
            for name in ("task", "items", "target", "compare", "target_system"):
                if getattr(self, name):
                    raise ValueError(f"`{name}` is for a live search (source: live); the recorded study reads "
                                     "the shipped searches.")
            return
        set_(self, "task", check_choice(self.task, "task", TASKS))
        items = tuple(self.items)
        if not items:
            raise ValueError("`items` must hold at least one item (`items: shipped`, or a CSV/JSONL file).")
        if len(items) > MAX_ITEMS:
            raise ValueError(f"`items` holds {len(items)} items; a live search takes at most {MAX_ITEMS}.")
        if any(getattr(i, "task", None) != self.task for i in items):
            raise ValueError(f"`items` must all be items of the task {self.task!r}.")
        set_(self, "items", items)
        if self.target is None or self.target.backend not in ("local", "openai"):
            raise ValueError("`target` must be a model that answers: {backend: local} or {backend: openai, model: "
                             "…, base_url: …}.")
        set_(self, "target", self.target.instance)
        set_(self, "target_system", str(self.target_system or "").strip())
        compare = tuple(self.compare)
        for name in compare:
            check_choice(name, "compare", tuple(TARGETS))
        set_(self, "compare", compare)
        set_(self, "assistant", check_choice(self.assistant, "assistant", ASSISTANTS))
        set_(self, "judge", check_choice(self.judge, "judge", JUDGES))
        if self.target.backend != "openai" and (self.assistant == "endpoint" or self.judge == "llm"):
            raise ValueError("`assistant: endpoint` and `judge: llm` need an OpenAI-compatible `target`; with a "
                             "local target use `assistant: local` and `judge: embedding`.")
        set_(self, "n_candidates", check_positive_int(self.n_candidates, "n_candidates", maximum=8,
                                                      why="each rewrite is an assistant call and a target answer"))
        set_(self, "depth", check_positive_int(self.depth, "depth", maximum=4, why="each round multiplies the calls"))

    @classmethod
    def from_mapping(cls, mapping: dict, *, base: Path | None = None) -> tuple[str, StabilityRequest]:
        """``(name, request)`` of a ``dbpa stability`` SPEC: ``items: shipped`` (with ``n_items``), a CSV/JSONL
        file of items relative to the SPEC's folder, or a list of rows; ``target`` and ``embedder`` are mappings."""
        from ..stability.tasks import items_from_rows, load_items, read_items
        from .specs import check_keys, sampler_config, spec_name

        values = check_keys(mapping, {"name", "n_items", *cls.__dataclass_fields__})
        name = spec_name(values, f"stability-{values.get('source', 'recorded')}")
        values.pop("name", None)
        n_items = values.pop("n_items", None)
        if values.get("target") is not None:
            values["target"] = sampler_config(values["target"], "target")
        if values.get("embedder") is not None:
            values["embedder"] = EmbedderConfig.from_mapping(check_keys(values["embedder"], set(values["embedder"])
                                                                        if isinstance(values["embedder"], dict)
                                                                        else (), "embedder"))
        items = values.get("items")
        if isinstance(items, list):  # rows written in the SPEC: {question, answers} or {request, secret}
            values["items"] = items_from_rows(check_choice(values.get("task"), "task", ("qa", "secret")), items)
        elif isinstance(items, str):
            task = check_choice(values.get("task"), "task", ("qa", "secret"))
            if items == "shipped":
                values["items"] = load_items(task)
            else:
                path = (base or Path()) / items
                if not path.is_file():
                    raise ValueError(f"`items`: {path} is not a file (CSV or JSONL), nor `shipped`.")
                values["items"] = read_items(path.read_bytes(), path.name, task)
        if n_items is not None:
            values["items"] = tuple(values.get("items", ()))[:check_positive_int(n_items, "n_items")]
        for key in ("compare", "items"):
            if isinstance(values.get(key), list):
                values[key] = tuple(values[key])
        return name, cls(**values)

    # ------------------------------------------------------------ identity

    def settings(self) -> dict:
        """The settings a report records (JSON-ready; never a secret)."""
        common = {"source": self.source, "cost": self.cost, "r": self.r, "theta1=theta2": self.theta,
                  "n_resamples": self.n_resamples, "seed": self.seed}
        if self.source == "recorded":
            return common
        return {**common, "task": self.task, "items": len(self.items), "target": self.target.as_mapping(),
                "target_system": self.target_system, "compare": list(self.compare), "assistant": self.assistant,
                "judge": self.judge, "embedder": self.embedder.as_mapping(), "n_candidates": self.n_candidates,
                "depth": self.depth}


@dataclass(frozen=True, eq=False)
class StabilityAuditResult:
    """The study (Table 1, Figure 1, rankings) and R(β, r) of every (task, target) at the request's (r, θ).

    ``criteria`` maps (task, target label) to a :class:`~dbpa_core.stability.criterion.StabilityResult`.
    """

    request: StabilityRequest = field(repr=False)
    study: object  # StabilityStudy
    criteria: dict = field(repr=False)

    @property
    def statistic(self) -> dict:
        """R(β, r) of each (task, target) at the request's r and θ (∞: no shift reaches r)."""
        return {key: float(result.value) for key, result in self.criteria.items()}

    def order(self, task: str) -> str:
        """The targets of ``task``, most stable first at (r, θ), ties joined by "="."""
        rows = [(target, value) for (t, target), value in self.statistic.items() if t == task]
        rows.sort(key=lambda row: -row[1])
        text = rows[0][0]
        for (_, before), (target, after) in zip(rows[:-1], rows[1:]):
            text += (" = " if before == after or np.isclose(before, after, rtol=1e-6, atol=0) else " > ") + target
        return text


def _live_runs(request: StabilityRequest, *, store, progress, sampler_for, embedder, token_count):
    from ..stability.judge import EmbeddingJudge, LLMJudge, calibrate_threshold
    from ..stability.runs import SEARCH_SETTINGS, TARGET_MAX_TOKENS, TARGETS, live_runs
    from ..stability.search import Target
    from ..audit.arms import RunUpdate
    from ..audit.runner import build_embedder, build_sampler

    sampler_for = sampler_for or build_sampler
    tokens = TARGET_MAX_TOKENS[request.task]
    endpoint = sampler_for(request.target)
    targets = [Target(target_name(request.target), endpoint, request.target_system or None, tokens)]
    targets += [Target(name, sampler_for(SamplerConfig("local", model=TARGETS[name]["model"])),
                       TARGETS[name]["system"], tokens) for name in request.compare]
    assistant = endpoint if request.assistant == "endpoint" else sampler_for(SamplerConfig("local"))
    embedder = embedder if embedder is not None else build_embedder(request.embedder)
    judge = (LLMJudge(endpoint) if request.judge == "llm" else
             EmbeddingJudge(embedder, calibrate_threshold(embedder, store=store).threshold))
    search = {**SEARCH_SETTINGS, "n_candidates": request.n_candidates, "depth": request.depth,
              "seed": test_seed(request)}
    report = None if progress is None else (
        lambda stage, done, total: progress(RunUpdate("sampling", stage, done, total)))
    return live_runs(request.items, targets, assistant, judge, embedder, token_count=token_count, store=store,
                     progress=report, cost=request.cost, **search)


def run(request: StabilityRequest, *, store=None, progress=None, sampler_for=None, embedder=None,
        token_count=None) -> StabilityAuditResult:
    """Run a :class:`StabilityRequest`: the searches (recorded, or now), the study, R at (r, θ).

    Parameters
    ----------
    request : StabilityRequest
    store : SampleStore, optional
        Every call of a live search is kept in it, so a rerun replays it.
    progress : callable(RunUpdate), optional
        Told after each item of each target, then as the bootstrap goes (stage ``"bootstrap"``).
    sampler_for : callable(SamplerConfig) -> Sampler, optional
        Default :func:`~dbpa_core.audit.runner.build_sampler` (keys from the environment).
    embedder : Embedder, optional
        Default ``build_embedder(request.embedder)``.
    token_count : callable, optional
        #Token of eq. (1) (default: the packaged SmolLM2's tokenizer).

    Returns
    -------
    StabilityAuditResult
    """
    from ..paper.stability import stability_study, target_label
    from ..stability.criterion import stability_criterion
    from ..stability.runs import recorded_runs

    from ..audit.arms import RunUpdate

    seed = test_seed(request)
    # The bootstrap's resamples as they go (stage "bootstrap"; a live search's items are "sampling").
    boot = None if progress is None else (lambda stage, done, total: progress(RunUpdate("bootstrap", stage, done,
                                                                                         total)))
    if request.source == "recorded":
        runs = recorded_runs(cost=request.cost)
        study = stability_study(runs=runs, n_resamples=request.n_resamples, seed=seed, cost=request.cost,
                                progress=boot)
        study = replace(study, settings={**study.settings,
                                         "source": "assets/recorded/audits/stability_search.json.gz"})
    else:
        runs = _live_runs(request, store=store, progress=progress, sampler_for=sampler_for, embedder=embedder,
                          token_count=token_count)
        study = stability_study(runs=runs, n_resamples=request.n_resamples, seed=seed, cost=request.cost,
                                progress=boot)
    criteria = {(task, target_label(target)): stability_criterion(run.losses, run.costs, request.r,
                                                                  theta1=request.theta, theta2=request.theta)
                for (task, target), run in runs.items()}
    return StabilityAuditResult(request, study, criteria)
