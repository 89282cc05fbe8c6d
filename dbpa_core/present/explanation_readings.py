"""Plain-language readings of a "What changed" account (:func:`dbpa_core.explain_change`): its themes,
how they were found, and its representative outputs."""

from __future__ import annotations

from .formatting import format_percent, format_pvalue, format_share


# ------------------------------------------------------------ what changed
#: How the two arms of an explanation are named in sentences (x first).
ARM_NAMES = ("original", "perturbed")


def theme_name(theme, n_terms: int = 3) -> str:
    """A theme's name: its first distinguishing words (``"planet, mars, red"``)."""
    return ", ".join(theme.terms[:n_terms]) or f"#{theme.cluster + 1} (no distinguishing words)"


def read_theme(theme, fdr: float, *, arms=ARM_NAMES) -> str:
    """One sentence for a theme of :func:`dbpa_core.explain_change`.

    A significant theme reads as a finding ("theme *planet, mars, red* — 31 %
    of perturbed outputs vs 2 % of original, q = 0.002"); any other says that
    its difference is within chance, so an unadjusted difference is never
    read as a finding.
    """
    shares = (f"{format_share(theme.share_y)} of {arms[1]} outputs vs {format_share(theme.share_x)} of "
              f"{arms[0]}")
    if theme.significant:
        return f"Theme *{theme_name(theme)}* — {shares}, q = {format_pvalue(theme.qvalue)}."
    return (f"Theme *{theme_name(theme)}* — {shares}: within what chance produces (q = "
            f"{format_pvalue(theme.qvalue)} > {fdr:g}), not a finding.")


def read_explanation(explanation, *, arms=ARM_NAMES) -> list[str]:
    """The sentences of a "What changed" account: one per significant theme, or why there is none.

    ``explanation`` is a :class:`~dbpa_core.stats.explain.ChangeExplanation`.
    Themes that are not significant after Benjamini–Hochberg are not
    listed: the account then says the change, if any, is diffuse.
    """
    found = explanation.significant_themes
    m = len(explanation.themes)
    if found:
        return [read_theme(t, explanation.fdr, arms=arms) for t in found] + [
            f"{len(found)} of {m} themes differ in share between the arms (Benjamini–Hochberg across the {m}: on "
            f"average at most {format_percent(explanation.fdr)} of themes declared like this are chance groupings)."]
    if m == 1:
        return ["All outputs form one theme, so no theme can be more common in one arm than in the other: the change, "
                "if any, is diffuse (a shift of the outputs as a whole) rather than a theme."]
    return [f"No theme's share differs between the arms beyond chance (Benjamini–Hochberg at {explanation.fdr:g} "
            f"across {m} themes): the change, if any, is diffuse — spread over the outputs rather than a theme one "
            "arm has and the other lacks."]


def read_themes_beside_test(explanation, *, declared: bool | None) -> str | None:
    """The sentence for themes found where the DBPA test above declared no change (else None).

    ``declared`` is the test's decision on the same outputs (None: not known, nothing is said).  The two
    are separate tests of one pair of arms, each with its own error control: the test compares how similar
    the outputs are (ω between P0 and P1), the themes compare what they are about (shares of clusters), so
    either can flag what the other misses; a page that showed both without a word read as a contradiction.
    """
    if declared is False and explanation.significant_themes:
        return ("The test above declared no change, yet these themes' shares differ: the two are separate tests of "
                "the same outputs (the test compares how similar the outputs are, the themes what they are about), "
                "so either can flag what the other misses. Read the themes as a lead to confirm with more outputs "
                "per arm, not as the audit's finding.")
    return None


def read_explanation_method(explanation) -> str:
    """One sentence that says how the themes were found and tested."""
    n = explanation.n_x + explanation.n_y
    tried = explanation.candidates
    how = (f"{explanation.n_clusters} chosen by silhouette among {tried[0]}–{tried[-1]}" if len(tried) > 1
           else f"with {n} outputs, {explanation.n_clusters} is the only number of themes tried")
    return (f"The {n} outputs of both arms were grouped into {explanation.n_clusters} themes by meaning, without "
            f"their arm labels ({how}), each named by its most distinctive words; each "
            f"theme's share was compared with {_theme_null(explanation)}.")


def _theme_null(explanation) -> str:
    """What each theme's share was compared with: every split (exact) or B random re-splits."""
    if explanation.exact:
        return (f"its share on all {explanation.n_resamples:,} splits of the pooled outputs between the arms "
                "(every split was counted: p is exact)")
    return f"{explanation.n_resamples:,} random re-splits of the arm labels"


def read_representatives(*, arms=ARM_NAMES) -> str:
    """One sentence that reads the representative outputs (the MMD witness)."""
    return (f"Representative outputs: those of each arm that resemble the rest of their own arm most and the other "
            f"arm least (the MMD witness; 0 = equally close to both). Every pair of arms has some, so read them as "
            f"illustrations of the {arms[0]} and {arms[1]} outputs, not as findings.")
