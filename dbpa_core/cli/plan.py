"""``dbpa plan A B``: samples per arm for each ω, planned from two files used as a pilot.

The plan is :func:`dbpa_core.stats.planning.compare_discrepancies` (one
:func:`~dbpa_core.stats.planning.plan_sample_size` per ω, on the same seed); each
line ends with the plan's reading, which says how near its target such plans
were measured to deliver (bench/bench_planner.py).
"""

from __future__ import annotations

from pathlib import Path

EXIT_OK = 0


def plan_command(args) -> int:
    from .._validation import check_probability
    from ..stats.planning import compare_discrepancies
    from .commands import _read_arm

    power, alpha = check_probability(args.power, "--power"), check_probability(args.alpha, "--alpha")
    pilot_a, pilot_b = _read_arm(Path(args.a)), _read_arm(Path(args.b))  # one arm per file, as `dbpa test`
    (texts_a, vectors_a), (texts_b, vectors_b) = ((pilot.texts, pilot.embeddings) for pilot in (pilot_a, pilot_b))
    if (vectors_a is None) != (vectors_b is None):
        raise ValueError(f"give an `embedding` column in both {args.a} and {args.b}, or in neither (then the "
                         "texts are embedded with MiniLM).")
    if vectors_a is None:
        from ..embedders import get_embedder

        embedder = get_embedder("minilm")
        vectors_a, vectors_b = embedder.embed(texts_a), embedder.embed(texts_b)
    try:
        plans = compare_discrepancies(vectors_a, vectors_b, args.discrepancies.split(","), power=power, alpha=alpha,
                                      m=args.m, similarity=args.similarity, n_simulations=args.simulations,
                                      k_max=args.k_max, rng=args.seed)
    except ValueError as error:  # name the files, not the function's parameters
        raise ValueError(str(error).replace("`pilot_x`", args.a).replace("`pilot_y`", args.b)) from None
    for name, plan in plans.items():
        print(f"{name}: k = {plan.k if plan.k is not None else f'> {plan.k_max}'} per arm. {plan.reading}")
    return EXIT_OK


def add_plan_parser(commands, similarities) -> None:
    plan = commands.add_parser("plan", help="plan samples per arm from two files used as a pilot, for each ω")
    plan.add_argument("a", help="pilot of the original arm")
    plan.add_argument("b", help="pilot of the perturbed arm")
    plan.add_argument("--discrepancies", default="jsd,energy,mmd", help="ω to compare, comma-separated")
    plan.add_argument("--power", type=float, default=0.8)
    plan.add_argument("--alpha", type=float, default=0.05)
    plan.add_argument("--m", type=int, default=1, help="perturbations in the family (Bonferroni: α/m each)")
    plan.add_argument("--similarity", default="cosine", choices=similarities, type=str.lower)
    plan.add_argument("--simulations", type=int, default=100, help="simulated audits per k")
    plan.add_argument("--k-max", type=int, default=200, help="the largest k per arm searched")
    plan.add_argument("--seed", type=int, default=0)
