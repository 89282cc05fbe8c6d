"""A compare SPEC through the batch path: ``dbpa batch export/import COMPARE_SPEC.yaml``.

:func:`dbpa_core.audit.batch.export_requests` lists the arms of an audit SPEC's request
(:meth:`~dbpa_core.audit.request.AuditRequest.arm_requests`), k samples each.  A compare SPEC
(:mod:`dbpa_core.requests.many`) has two arms per prompt and a k per prompt, so
:func:`batch_spec` presents it in the same shape: one arm per prompt × arm, each with its own
``k``, prompt, system prompt, seed (``seed`` for the original arm, ``seed + 1`` for the perturbed
one) and sampler, exactly as :func:`~dbpa_core.requests.many.run_compare_spec` samples them.  So
the exported lines are the requests the live run would send, their results land in the slots it
reads, and after ``batch import`` ``dbpa compare SPEC.yaml`` draws nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..audit.request import ArmRequest, EmbedderConfig, SamplerConfig, arm_seed

__all__ = ["CompareBatchSpec", "batch_spec", "compare_batch_spec", "is_compare_spec"]

#: Keys only a compare SPEC has (an audit SPEC has `scenario`, or `prompts` as a mapping of original and
#: perturbations, and `perturbations`).
_COMPARE_ONLY = {"system", "perturbed_system", "arms", "fdr"}


@dataclass(frozen=True)
class CompareArm(ArmRequest):
    """One prompt × arm of a compare SPEC: an ``ArmRequest`` (what the batch export reads) with the prompt's own
    ``k``."""

    k: int


@dataclass(frozen=True)
class _Arms:
    arms: tuple[CompareArm, ...]
    embedder: EmbedderConfig

    def arm_requests(self) -> list[CompareArm]:
        return list(self.arms)


@dataclass(frozen=True)
class CompareBatchSpec:
    """What the batch export and import read of a SPEC, for a compare SPEC.

    Attributes
    ----------
    request : object
        ``arm_requests()`` (one :class:`CompareArm` per prompt × arm) and ``embedder``.
    k : int
        The largest per-prompt k (each arm carries its own).
    sampler, embedder : dict
        The original arm's sampler and the embedder, as validated.
    command : str
        The command that runs the SPEC once its samples are stored.
    """

    request: _Arms
    k: int
    sampler: dict
    embedder: dict
    command: str = "compare"


def compare_batch_spec(spec) -> CompareBatchSpec:
    """The batch path's view of a :class:`~dbpa_core.requests.many.CompareSpec`."""
    configs = [SamplerConfig.from_mapping(s) for s in spec.samplers]
    arms = []
    for prompt in spec.prompts:
        for perturbed, (arm, config, system) in enumerate(zip(spec.arms, configs, spec.systems)):
            # The seeds and system prompts of run_compare_spec, slot for slot.
            arms.append(CompareArm(f"{prompt.prompt_id}/{arm}", prompt.prompt,
                                   prompt.system if prompt.system is not None else system,
                                   arm_seed(spec.seed, perturbed=bool(perturbed)), config, bool(perturbed), prompt.k))
    return CompareBatchSpec(_Arms(tuple(arms), EmbedderConfig.from_mapping(spec.embedder)),
                            max(p.k for p in spec.prompts), dict(spec.samplers[0]), dict(spec.embedder))


def is_compare_spec(data) -> bool:
    """Whether a SPEC mapping is a compare SPEC: ``prompts`` a list or a file name (an audit SPEC's is a
    mapping of original and perturbations, or it names a ``scenario``), or a key only a compare SPEC has."""
    if not isinstance(data, dict) or "scenario" in data or "perturbations" in data:
        return False
    return isinstance(data.get("prompts"), (list, str)) or bool(_COMPARE_ONLY & set(data))


def batch_spec(path: str | Path):
    """The SPEC at ``path`` for ``dbpa batch``: an audit SPEC as it is, a compare SPEC through
    :func:`compare_batch_spec`; either one's errors name the file, the key and its line."""
    from ..audit.spec import SpecError, load_spec
    from ..data.assets import read_yaml
    from .many import load_compare_spec

    if is_compare_spec(read_yaml(Path(path), SpecError)):
        return compare_batch_spec(load_compare_spec(path))
    return load_spec(path)
