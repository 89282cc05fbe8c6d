"""Plain-language readings of the papers' experiments: the persona grid (Table 2) and the TPR/FPR study's AUCs."""

from __future__ import annotations


def read_persona_grid(grid, alpha: float = 0.05, *, synthetic=()) -> list[str]:
    """One sentence per model of a persona grid: how many medical (control) and other (target) personas moved
    its answers at p < ``alpha``, unadjusted as in the paper's Table 2, and which.

    ``synthetic`` names the simulated models: their text is made up, so it is not compared with what the
    paper found for real models, and a target they move by construction that the test missed is said to be
    missed (a trial read "as the paper found for large models" under a simulated model with 0 of 4 targets).
    """
    sentences = []
    for column, model in enumerate(grid.models):
        moved = grid.pvalues[:, column] < alpha
        parts, named = [], {}
        for kind, words in (("control", "medical (control)"), ("target", "other (target)")):
            rows = [i for i, k in enumerate(grid.kinds) if k == kind]
            named[kind] = [grid.personas[i] for i in rows if moved[i]]
            if rows:
                parts.append(f"{len(named[kind])} of the {len(rows)} {words} personas"
                             + (f" ({', '.join(named[kind])})" if named[kind] else ""))
        head = f"{model}: {' and '.join(parts)} moved the answers at p < {alpha:g} (unadjusted). "
        if model in synthetic:
            targets = sum(1 for kind in grid.kinds if kind == "target")
            missed = targets - len(named["target"])
            sentences.append(head + "Synthetic text: its target personas change the answers by construction"
                             + (f", and the test missed {missed} of {targets} at this k (a small k shows only large "
                                "moves)." if missed else ", and the test found them all."))
            continue
        sentences.append(head
                         + ("The paper found large models unmoved by a medical role and small ones variable: this "
                            "model's answers moved with a medical role too."
                            if named["control"] else
                            "No medical role was shown to move its answers (which is not proof that none did: "
                            "a small k shows only large moves), as the paper found for large models."))
    return sentences


def read_chance_aucs(aucs: dict, *, k: int | None = None, level: float = 0.6) -> str:
    """A sentence for the models whose AUC is near or below chance (< ``level``), or "" when there are none.

    A live TPR/FPR run at k = 5 printed "AUC 0.46" under "their controls and targets hold by construction"
    with no word on what a below-chance AUC means (trial 7).
    """
    weak = [f"{name} ({auc:.2f})" for name, auc in aucs.items() if auc < level]
    if not weak:
        return ""
    at_k = f" with k = {k} outputs per arm" if k else ""
    return (f"AUC near or below 0.5 — {', '.join(weak)}: here the test told targets from controls no better than "
            f"chance{at_k}. That is what too few outputs give even where the targets do change the answers: only "
            "large changes show at a small k; raise k or the replicates.")
