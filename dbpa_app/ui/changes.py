"""What changed between a result's two arms: the result it belongs to, its shared explanation, its panel.

A page keeps an :class:`Audited` (a shown two-arm result with what identifies
its outputs) so that the "What changed" of those arms
(:func:`dbpa_core.stats.explain.explain_change`, as ``explain: true`` in a SPEC
computes it) is computed once for every session, kept in the shared cache
beside it (:mod:`ui.cache`), and drawn by :func:`what_changed`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from dbpa_core.audit.request import AuditRequest
from dbpa_core.present.formatting import format_pvalue, unbroken

from .cache import shared
from .components import projection_caveat


@dataclass(frozen=True, eq=False)
class Audited:
    """A shown two-arm result with what identifies its outputs, so that its "What changed" is cached with it.

    A page keeps this (not the bare result) as its result: when the inputs
    change, the kept result and its explanation still belong together.

    Attributes
    ----------
    key : str
        Identifies the two arms' outputs and embeddings: the request's digest
        (and the perturbation's index in a family).
    result : PerturbationResult
    n_resamples, seed : int
        B and the seed of the explanation's re-splits (the test's own).
    request : AuditRequest or None
        The request the result came from (None for an uploaded file).
    family : FamilyResult or None
        The whole family of that request, when the page shows it.
    """

    key: str
    result: object
    n_resamples: int
    seed: int
    request: AuditRequest | None = None
    family: object = None

    @classmethod
    def of_request(cls, request: AuditRequest, index: int, family) -> Audited:
        """Perturbation ``index`` of ``request``'s result ``family``."""
        tested = request.tests_only()
        return cls(f"{tested.key}:{index}", family.results[index], tested.n_resamples, tested.seed, request, family)

    @classmethod
    def of_two_sample(cls, request, result) -> Audited:
        """The result of a :class:`~dbpa_core.requests.two_sample.TwoSampleRequest` (an uploaded file's arms):
        keyed by the request's own digest (the file's content, the arms, the embedder, the test)."""
        return cls(request.key, result, int(request.n_resamples), int(request.seed))


def explanation(audited: Audited, *, fdr: float):
    """What changed between the two arms of ``audited`` (a :class:`~dbpa_core.stats.explain.ChangeExplanation`).

    Kept in the shared cache by the arms' key, the FDR level and B, with the
    test's own B and seed (as ``explain: true`` in a SPEC computes it):
    computed once for all sessions, and an FDR level re-read from the cache
    when it comes back.
    """
    from dbpa_core.stats.explain import explain_change

    result, fdr = audited.result, float(fdr)

    def compute():
        with st.spinner("Finding what changed…"):
            return explain_change(list(result.original.texts), list(result.perturbed.texts),
                                  result.original.embeddings, result.perturbed.embeddings, fdr=fdr,
                                  n_resamples=audited.n_resamples, rng=audited.seed)

    return shared("explanation", (audited.key, fdr, audited.n_resamples, audited.seed), compute)


def family_explanations(audited: Audited, *, fdr: float) -> list:
    """One explanation per perturbation of ``audited``'s family (a SPEC's ``explain: true``), in order."""
    return [explanation(Audited.of_request(audited.request, i, audited.family), fdr=fdr)
            for i in range(len(audited.family.results))]


#: The FDR levels a "What changed" panel offers for its themes (Benjamini–Hochberg).
FDR_LEVELS = (0.01, 0.05, 0.1, 0.2)


def what_changed(audited, *, key: str, declared: bool | None, arms=("original", "perturbed"), coordinates=None,
                 method: str = "pca", seed: int = 0, same_picture: bool = True):
    """The "What changed" panel under a two-arm result: readings, themes table, theme cloud, representatives.

    ``audited`` is a :class:`Audited` (the explanation is cached with
    it); ``declared`` the decision the page shows for the same two arms (:func:`declares_change`; themes
    found where the test declared no change are said to be a lead, not the finding); ``coordinates`` the 2-D projection the page's cloud drew (computed
    here with ``method`` and ``seed`` when None); ``same_picture`` says that the
    page drew that projection above (its caption then says so).  Only themes significant after
    Benjamini–Hochberg are read as findings; with none, the readings say the
    change, if any, is diffuse.  Returns the explanation, for the page's
    downloads.
    """
    from dbpa_core.present import explanation as ex
    from dbpa_core.present.explanation_readings import (
        read_explanation,
        read_explanation_method,
        read_representatives,
        read_themes_beside_test,
        theme_name,
    )

    from .runs import projection

    original, perturbed = audited.result.original, audited.result.perturbed
    with st.container(border=True, key=f"{key}_what_changed"):
        st.subheader("What changed", anchor=False)
        fdr = st.select_slider("False discovery rate of the themes", FDR_LEVELS, 0.1, key=f"{key}_fdr",
                               help="Benjamini–Hochberg level across the themes: on average at most this share of "
                                    "the themes declared are chance groupings. It only re-reads the same p-values.")
        found = explanation(audited, fdr=fdr)
        sentences = read_explanation(found, arms=arms)
        if found.significant_themes:
            for sentence in sentences:
                st.markdown(sentence)
            beside = read_themes_beside_test(found, declared=declared)
            if beside:
                st.info(beside, icon=":material/info:")
        else:
            st.info(sentences[0], icon=":material/blur_on:")
        st.caption(read_explanation_method(found))
        # The typical outputs are listed under the table, for the significant themes only (they are the
        # findings): a column of long texts would squeeze the table at 1024 px.
        table = ex.themes_table(found, arms=arms).drop(columns="typical output")
        # p at its floor 1/(B+1) reads "≤ …" as on the p-value card; q is a BH adjustment, not a floor.
        table["p"] = [unbroken(format_pvalue(value, found.n_resamples, exact=found.exact)) for value in table["p"]]
        table["q (BH)"] = [format_pvalue(value) for value in table["q (BH)"]]
        for column in (f"{arms[1]} (%)", f"{arms[0]} (%)"):
            table[column] = [ex.shown_share(value) for value in table[column]]
        st.table(table, hide_index=True)  # static: every cell wraps, nothing is cut
        st.caption(f"Each row is a theme: the share of each arm's outputs in it, its permutation p and its q after "
                   f"Benjamini–Hochberg; only rows marked *yes* (q ≤ {fdr:g}) are differences beyond chance, the "
                   "others are groupings any two samples show.")
        for theme in found.significant_themes:
            with st.expander(f"Typical outputs of the theme *{theme_name(theme)}*"):
                for text in theme.examples:
                    st.code(text or "(empty output)", language=None, wrap_lines=True)
        picture = ("The same 2-D picture as the outputs above:" if same_picture else
                   f"{projection_caveat(np.shape(original.embeddings)[1])} Outputs in 2-D ({method.upper()}):")
        if coordinates is None:
            coordinates = projection(np.vstack([original.embeddings, perturbed.embeddings]), method, seed=seed)
        texts = list(original.texts) + list(perturbed.texts)
        st.plotly_chart(ex.theme_cloud(coordinates, found, texts, arms=arms, method=method.upper()),
                        width="stretch", key=f"{key}_theme_cloud")
        st.caption(f"{picture} each output coloured by its theme (grey: not significant); circles are {arms[0]} "
                   f"outputs, diamonds {arms[1]}. Hover a point to read it and its theme.")
        st.plotly_chart(ex.theme_shares(found, arms=arms), width="stretch", key=f"{key}_theme_shares")
        st.caption("The share of each arm's outputs in each theme; a star marks a theme whose difference is beyond "
                   "chance after Benjamini–Hochberg.")
        st.markdown("**Representative outputs**")
        st.caption(read_representatives(arms=arms))
        for column, arm, name in zip(st.columns(2), ("x", "y"), arms):
            column.markdown(f"Most characteristic of the **{name}** outputs")
            chosen = found.representative[arm]
            for rank, (text, witness) in enumerate(zip(chosen.texts, chosen.witness), start=1):
                column.caption(f"{rank} · witness {witness:+.3f}")
                column.code(text or "(empty output)", language=None, wrap_lines=True)
    return found
