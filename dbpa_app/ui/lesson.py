"""The home page as a lesson (issue 45): the sticky verdict strip and presentation mode.

The exposition the home page mirrors kept T, p and the decision in its header
while the sliders moved; here the strip is a Streamlit container made sticky
by CSS, filled once the result exists and redrawn in place while streaming.
Presentation mode (``?present=1`` or the sidebar toggle) collapses the
sidebar, enlarges type, stacks the charts full width and darkens captions
for a projector.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import streamlit as st

from dbpa_core.present.formatting import format_percent, format_pvalue
from dbpa_core.present.verdicts import effect_in_words, missed_note, plain_verdict, technical_label

#: The strip sticks under Streamlit's top bar (3.75 rem) while the page scrolls under it.
LESSON_CSS = """
<style>
/* Streamlit wraps a keyed container in a layout wrapper of its own height: the wrapper is what sticks. */
[data-testid="stLayoutWrapper"]:has(> .st-key-verdict), .st-key-verdict { position: sticky; top: 3.75rem;
  z-index: 990; background: var(--background-color, #fff); }
.st-key-verdict { padding: 0.35rem 0 0.25rem 0; border-bottom: 1px solid rgba(49, 51, 63, 0.15); }
.dbpa-verdict { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0.2rem 1.1rem; line-height: 1.35; }
.dbpa-verdict .headline { font-size: 1.3rem; font-weight: 700; padding-left: 0.55rem;
  border-left: 0.3rem solid #2e7bcf; }
.dbpa-verdict .headline.changed { border-left-color: #e07b00; }
.dbpa-verdict .fact { font-size: 1.0rem; }
.dbpa-verdict .label { font-size: 0.8rem; color: #4a4d57; letter-spacing: 0.02em; }
.dbpa-verdict-note { font-size: 0.85rem; color: #4a4d57; margin-top: 0.15rem; }
.dbpa-verdict-note.missed { color: #8a4b00; }
/* Scenario and intervention share a row from 1200 px; below it each takes the row (their titles were cut). */
@media (max-width: 1200px) {
  .st-key-lesson_choice [data-testid="stHorizontalBlock"] { flex-wrap: wrap; }
  .st-key-lesson_choice [data-testid="stColumn"] { flex: 1 1 100% !important; min-width: 100% !important; }
}
</style>
"""

#: Presentation mode: larger type, captions a projector can show (grey 12-px captions washed out).
PRESENT_CSS = """
<style>
html { font-size: 19px !important; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] * { color: #262730 !important;
  font-size: 0.95rem !important; }
.js-plotly-plot .main-svg text { font-size: 15px !important; }
[data-testid="stLayoutWrapper"]:has(> .st-key-verdict) { top: 0.5rem; }
.dbpa-verdict .headline { font-size: 1.6rem; }
</style>
"""


#: The lesson's k: large enough that the strongest interventions show, small enough to draw at once.
LESSON_K = 40


def lesson_k(k: int | None, previous_limit: int | None, limit: int) -> int:
    """The k slider's value for a backend holding at most ``limit`` outputs per arm (5 ≤ k ≤ limit).

    A k that sat at the previous backend's cap (Recorded's 20) goes back to :data:`LESSON_K` when the cap
    changes: it was the cap, not a choice (issue 45: k stayed at 20 after leaving Recorded).
    """
    if k is None or (previous_limit is not None and previous_limit != limit and k == previous_limit):
        k = LESSON_K
    return max(5, min(int(k), limit))


def presenting() -> bool:
    """Whether presentation mode is on: ``?present=1`` in the address, or the sidebar toggle."""
    return st.query_params.get("present", "") in ("1", "true", "yes") or bool(st.session_state.get("present"))


def presentation_toggle() -> None:
    """The sidebar's switch, kept in the address (``?present=1``) so a reload stays in presentation mode."""
    from_address = st.query_params.get("present", "") in ("1", "true", "yes")
    st.session_state.setdefault("present", from_address)
    on = st.sidebar.toggle("Presentation mode", key="present",
                           help="Larger type and charts, darker captions, for a projector; collapse the sidebar "
                                "with its arrow (?present=1 in the address opens it collapsed).")
    if on and not from_address:
        st.query_params["present"] = "1"
    elif not on and from_address:
        del st.query_params["present"]


def apply_presentation_mode() -> None:
    """Inject the larger type when presenting (call once per run, on any page)."""
    if presenting():
        st.html(PRESENT_CSS)


@dataclass(frozen=True)
class StripNumbers:
    """Every number the verdict strip reads, and nothing else: taken from a result, or shipped
    (:mod:`ui.first_verdict`) so that the home page's default verdict shows before the test has run.

    Attributes
    ----------
    pvalue, n_resamples, exact
        The test's p-value and its resolution (B, or N enumerated splits when ``exact``).
    effect_size, standardized_effect
        What :func:`~dbpa_core.present.verdicts.effect_in_words` reads.
    true_effect : float or None
        The simulated model's true effect of the intervention (None when unknown).
    k : int
        Outputs per arm.
    """

    pvalue: float
    n_resamples: int
    exact: bool
    effect_size: float
    standardized_effect: float | None
    true_effect: float | None
    k: int

    @classmethod
    def of(cls, result, k: int | None = None) -> StripNumbers:
        """The numbers of a :class:`~dbpa_core.audit.results.PerturbationResult` (``k``: its original arm's size)."""
        test = result.test
        return cls(float(test.pvalue), int(test.n_resamples), bool(test.exact), float(test.effect_size),
                   None if test.standardized_effect is None else float(test.standardized_effect),
                   None if result.true_effect is None else float(result.true_effect),
                   len(result.original.texts) if k is None else int(k))


def strip_html(numbers: StripNumbers, alpha: float, *, intervention: str, label: str, note: str = "",
               simulated: bool = False) -> str:
    """The compact verdict as HTML: plain verdict, p, effect in words, intervention (see :func:`verdict_strip`)."""
    changed = numbers.pvalue <= alpha
    headline = plain_verdict(numbers.pvalue, alpha)
    p = format_pvalue(numbers.pvalue, numbers.n_resamples, exact=numbers.exact)
    p_text = f"p {p}" if p.startswith(("≤", "<")) else f"p = {p}"
    effect = effect_in_words(numbers.effect_size, numbers.standardized_effect)
    notes = []
    if note:
        notes.append(f'<div class="dbpa-verdict-note">{html.escape(note)}</div>')
    if simulated and not changed and numbers.true_effect:
        notes.append('<div class="dbpa-verdict-note missed">'
                     + html.escape(missed_note(numbers.true_effect, numbers.k, numbers.standardized_effect, alpha))
                     + "</div>")
    elif simulated and changed and numbers.true_effect == 0:
        notes.append('<div class="dbpa-verdict-note missed">A false alarm: this control changes nothing in the '
                     f"simulated model; it happens in about {format_percent(alpha)} of tests of a control.</div>")
    kind = "headline changed" if changed else "headline"
    return (f'<div class="dbpa-verdict" data-testid="dbpa-verdict">'
            f'<span class="{kind}">{html.escape(headline)}</span>'
            f'<span class="fact">{html.escape(p_text)}</span>'
            f'<span class="fact">effect: {html.escape(effect)}</span>'
            f'<span class="fact">intervention: <b>{html.escape(intervention)}</b></span>'
            f'<span class="label">{html.escape(technical_label(numbers.pvalue, alpha))} · {html.escape(label)} · '
            f"k = {numbers.k} per arm</span></div>" + "".join(notes))


def verdict_strip(slot, result, alpha: float, *, intervention: str, label: str, k: int, note: str = "",
                  simulated: bool = False) -> None:
    """Draw the compact verdict into ``slot`` (an ``st.empty``): plain verdict, p, effect in words, intervention.

    The technical label (REJECT / FAIL TO REJECT H₀) is the smaller text; a simulated target the test
    missed says so, with the k that would have been needed (:func:`dbpa_core.present.verdicts.missed_note`).
    """
    # st.html, not st.markdown: its script is the one the page's CSS (LESSON_CSS) already loads, where raw HTML in
    # markdown needs three more, fetched only once the strip arrives (issue 45: 0.15 s of a fresh first view).
    slot.html(strip_html(StripNumbers.of(result, k), alpha, intervention=intervention, label=label, note=note,
                         simulated=simulated))


def method_code(*, backend: str, prompt: str, perturbed: str, k: int, statistic: str, n_resamples: int,
                alpha: float, system0: str | None = None, system1: str | None = None) -> str:
    """The method as this project runs it, as a script that runs as it is (the issue: ``x0`` was undefined)."""
    arg0, arg1 = (f", system={system!r}" if system else "" for system in (system0, system1))
    return f"""import dbpa_core as d
from dbpa_core.samplers import get_sampler
from dbpa_core.embedders import get_embedder

x0 = {prompt!r}
x1 = {perturbed!r}
sampler, embedder = get_sampler("{backend}"), get_embedder("minilm")
e0 = embedder.embed(sampler.sample(x0, {k}{arg0}, seed=0))   # outputs y_0,i of prompt x0, embedded: (k, 384)
e1 = embedder.embed(sampler.sample(x1, {k}{arg1}, seed=1))
result = d.dbpa_test(e0, e1, discrepancy="{statistic}", n_resamples={n_resamples}, rng=0)
print(result.statistic, result.pvalue)   # and result.null_distribution
pvalues = [result.pvalue]   # one p per perturbation of the family
family = d.adjust_pvalues(pvalues, method="bonferroni", alpha={alpha:g})
print(family.reject)"""


BIBTEX = """@inproceedings{rauba2025statistical,
  title     = {Statistical Hypothesis Testing for Auditing Robustness in Language Models},
  author    = {Rauba, Paulius and Wei, Qiyao and van der Schaar, Mihaela},
  booktitle = {Proceedings of the 42nd International Conference on Machine Learning (ICML)},
  year      = {2025}
}"""


def show_method(*, backend: str, scenario, perturbation, k: int, statistic: str, n_resamples: int,
                alpha: float) -> None:
    """Section 04: the method (paper §3, Algorithm 1), its code and the citation, each one click away."""
    st.subheader("04 · The method")
    # Reserved for a worked blind-spot example (a change the statistic cannot see): keep it here, in the
    # method section, above the derivation.
    st.container(key="method_blind_spot")
    with st.expander("The test step by step: H₀, the statistic, the p-value, the family (paper §3, Algorithm 1)"):
        st.markdown("**Null hypothesis.** The intervention leaves the model's output distribution unchanged:")
        st.latex(r"H_0:\; S(x_0) \overset{d}{=} S(x_1), \qquad "
                 r"y_{0,i} \sim S(x_0),\; y_{1,j} \sim S(x_1),\; i, j = 1..k")
        st.markdown("**Statistic.** Embed every output once, $e(y)$ of unit length. The paper's ω compares the "
                    "similarities within x₀'s outputs, $P_0$, with those across the arms, $P_1$, by the "
                    "Jensen–Shannon divergence (bits, 30 bins on the pooled range); the exposition's T is the "
                    "squared distance between the arms' centroids:")
        st.latex(r"P_0 = \{ s(y_{0,i}, y_{0,j}) : i < j \},\quad P_1 = \{ s(y_{0,i}, y_{1,j}) \},\quad "
                 r"\omega = \mathrm{JSD}(P_0 \,\|\, P_1)")
        st.latex(r"T = \lVert \hat\mu_0 - \hat\mu_1 \rVert^2,\quad \hat\mu_a = \tfrac1k \textstyle\sum_i e(y_{a,i}),"
                 r"\qquad \text{effect } \lVert \hat\mu_0 - \hat\mu_1 \rVert = \sqrt{T}")
        st.markdown("**Monte-Carlo p-value** (Algorithm 1). Pool the 2k outputs, split them at random B times, "
                    "recompute the statistic on the same similarity matrix, and count (the +1 keeps p above 0, "
                    "Phipson & Smyth 2010):")
        st.latex(r"p = \frac{1 + \#\{ b : T_b \ge T_{\mathrm{obs}} \}}{1 + B} \;\ge\; \frac{1}{B+1}")
        st.markdown("**Family-wise error.** With m perturbations, each tested at α, the chance of at least one "
                    "false alarm grows towards 1 − (1 − α)^m; Bonferroni rejects only when m·p ≤ α, which keeps "
                    "that chance below α. The samples needed grow with m:")
        st.latex(r"k_{\mathrm{adj}} \propto \left( \frac{z_{1-\alpha/(2m)} + z_{1-\beta}}{\omega} \right)^2")
        st.markdown("This is the paper's z-test approximation, not DBPA's power: at its k the JS distance finds a "
                    "normal shift far less often than planned (Reproduce › §3.2). `dbpa_core.plan_sample_size` "
                    "plans DBPA itself from a small pilot of each arm, by simulation.")
    with st.expander("What DBPA cannot see"):
        from .exposition import blind_spot_section  # exposition imports this module

        blind_spot_section()
    prompt, system = scenario.apply(perturbation)
    with st.expander("The method as this project runs it: a script with the settings above"):
        st.code(method_code(backend=backend, prompt=scenario.prompt, perturbed=prompt,
                            system0=scenario.system or None, system1=system or None, k=k, statistic=statistic,
                            n_resamples=n_resamples, alpha=alpha), language="python", wrap_lines=True)
    with st.expander("Cite"):
        st.code(BIBTEX, language="bibtex", wrap_lines=True)
