"""Across many prompts: did one perturbation change the outputs across a whole eval suite?"""

import hashlib
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from dbpa_core.audit.compare import COMPARE_DISCREPANCY, CompareRequest, run_compare
from dbpa_core.present.compare import compare_readings, compare_record, compare_table, prompt_clouds
from dbpa_core.data.assets import ASSETS
from dbpa_core.data.eval_logs import FORMATS
from dbpa_core.paper.embeddings import load_shipped_embeddings
from dbpa_core.present.formatting import format_number, format_percent, format_pvalue
from dbpa_core.present.readings import decision
from dbpa_core.present.verdicts import effect_in_words, plain_verdict
from dbpa_core.stats.discrepancy import DISCREPANCY_NAMES
from dbpa_core.stats.planning import MIN_PILOT
from dbpa_core.stats.planning_many import plan_many_prompts, read_many_plan
from dbpa_app.ui.components import decision_box, downloads, guard, markdown_text, verdict_headline
from dbpa_app.ui.freshness import keep, request_inputs, result_area
from dbpa_app.ui.runs import projection, shared_call, shared_figure
from dbpa_app.ui.sidebar import current_settings

EXAMPLE = ASSETS / "examples" / "gpt35_vs_gpt4_9_prompts.jsonl"
EXAMPLE_LABEL = "Example: the paper's GPT-3.5 vs GPT-4 answers (9 prompts × 5 answers each)"



def short(prompt: str, limit: int) -> str:
    prompt = " ".join(prompt.split())
    return prompt[:limit] + ("…" if len(prompt) > limit else "")


def most_changed_clouds(result, rows) -> None:
    """Small multiples of the lowest-q prompts' clouds, each its own PCA (cached per prompt)."""
    a, b = result.arms
    rows = [row for row in rows if row["prompt_id"] in result.vectors]
    if not rows:
        return
    panels = []
    for row in rows:
        x, y = result.vectors[row["prompt_id"]]
        prompt = next(p for p in result.prompts if p.prompt_id == row["prompt_id"])
        # Two short lines of the prompt: three panels side by side leave ≈ 170 px a title in a 1024 px page.
        lines = textwrap.wrap(" ".join(row["prompt"].split()), 26)
        if len(lines) > 2:
            lines[1] = lines[1][:25] + "…"
        panels.append(("\n".join([f"q = {row['qvalue']:.3f}", *lines[:2]]), projection(np.vstack([x, y]), "pca"), len(x),
                       [*prompt.texts[a], *prompt.texts[b]]))
    st.plotly_chart(shared_figure(prompt_clouds, panels, (a, b)), key="mp_clouds")
    st.caption(f"Each panel is one of the {len(panels)} most changed prompts (lowest q), its {a} outputs (circles) "
               f"and {b} outputs (diamonds) drawn in a 2-D view of that prompt's own answers: where the two "
               "shapes sit apart the models answered that prompt differently, but the test uses every dimension, "
               "so clouds that overlap here can still differ.")


def what_changed(result, rows) -> None:
    """Per flagged prompt, its themes (explain_change, Benjamini–Hochberg across that prompt's themes)."""
    flagged = [row for row in rows if "themes" in row]
    st.subheader("What changed")
    if not flagged:
        st.caption("No prompt is flagged on its own, so no prompt's themes are read: what changed is spread too "
                   "thinly over the prompts to name in any one of them.")
        return
    found = [row for row in flagged if row["themes"]]
    st.caption(f"Themes are clusters of one flagged prompt's outputs; a theme is named only when its share differs "
               f"between the arms at FDR {result.test.fdr:g} (Benjamini–Hochberg across that prompt's themes). "
               f"{len(found)} of the {len(flagged)} flagged prompts have one; in the others the change is spread "
               "over the outputs.")
    for row in found:
        st.markdown(f"**q = {row['qvalue']:.3f}** · {markdown_text(short(row['prompt'], 110))}")
        for sentence in row["what_changed"]:
            st.caption(sentence)


def plan_next(result, digest: str, alpha: float) -> None:
    """How many prompts and outputs per prompt the next audit needs, planned from this one as a pilot."""
    st.subheader("Plan the next audit: how many prompts, how many outputs each?")
    pilot = [result.vectors[p.prompt_id] for p in result.prompts if p.prompt_id in result.vectors
             and min(map(len, result.vectors[p.prompt_id])) >= MIN_PILOT]
    if not pilot:
        st.caption(f"Planning needs at least {MIN_PILOT} outputs per arm of a prompt, embedded (an embedding "
                   "similarity): this log has none.")
        return
    st.caption(f"Uses these {len(pilot)} prompts as a pilot: each design (m prompts × k outputs per prompt and arm) "
               "is simulated 100 times with this page's test, prompts drawn from the pilot's and outputs from "
               "each prompt's own (simulated beyond the pilot's size).")
    if st.button("Plan by simulation", key="mp_plan_run"):
        with st.spinner("Simulating audits of each design…"):
            plan = shared_call(plan_many_prompts, [x for x, _ in pilot], [y for _, y in pilot], power=0.8,
                               alpha=alpha, discrepancy=result.request.discrepancy,
                               similarity=result.request.similarity, prompts_grid=(3, 5, 9, 20), k_grid=(2, 3, 5, 8),
                               n_simulations=100, n_resamples=100, rng=result.request.seed)
        st.session_state["mp_plan"] = (digest, plan)
    kept = st.session_state.get("mp_plan")
    if not kept or kept[0] != digest:
        return
    plan = kept[1]
    st.dataframe(pd.DataFrame(
        {f"k = {k}": ["" if np.isnan(v) else f"{100 * v:.0f} %" for v in plan.estimated_power[:, j]]
         for j, k in enumerate(plan.k_grid)}, index=[f"{m} prompts" for m in plan.prompts_grid]), key="mp_plan_table")
    st.caption("Each cell is the share of simulated audits of that design that declared the change (power); a blank "
               "cell was not simulated because a smaller k already reached 80 %.")
    for sentence in read_many_plan(plan):
        st.caption(sentence)


settings = current_settings()
st.title("Across many prompts")
st.write("Did one change — a new model, system prompt or persona — move the answers across *all* your prompts? "
         "Each prompt's outputs are re-split only among themselves, and the prompts' discrepancies are averaged "
         "into one test: with a few outputs per prompt it finds a change that no single prompt shows, and "
         "per-prompt q-values still say where it moved.")

with guard():
    source = st.radio("Outputs", [EXAMPLE_LABEL, "Upload an eval log"], key="mp_source")
    if source == EXAMPLE_LABEL:
        st.caption("From the paper's shipped responses (Rauba, Wei & van der Schaar, ICML 2025; seed 9): the "
                   "seed's patient prompt and the 8 paraphrases of the fixed patient, the first 5 answers of each "
                   "model to each.")
        files, fmt, names = [EXAMPLE], "jsonl", [EXAMPLE.name]
        digest = "example"
    else:
        fmt = st.selectbox("Log format", FORMATS, index=FORMATS.index("jsonl"), key="mp_format")
        uploads = st.file_uploader("One log holding both arms, or two logs (one arm each)", accept_multiple_files=True,
                                   key="mp_files")
        if not uploads:
            st.caption('No file yet. A JSONL log has one line per output: {"prompt": …, "arm": …, "text": …}.')
            st.stop()
        if len(uploads) > 2:
            raise ValueError(f"Upload one log (both arms) or two (one arm each); got {len(uploads)} files.")
        folder = Path(tempfile.mkdtemp(prefix="dbpa_compare_"))
        files = []
        for upload in uploads:
            path = folder / Path(upload.name).name
            path.write_bytes(upload.getvalue())
            files.append(path)
        names = [u.name for u in uploads]
        digest = hashlib.sha256(b"".join(u.getvalue() for u in uploads)).hexdigest()[:12]
    columns = st.columns(4)
    discrepancy = columns[0].selectbox("ω", DISCREPANCY_NAMES, index=DISCREPANCY_NAMES.index(COMPARE_DISCREPANCY),
                                       key="mp_discrepancy")
    n_resamples = int(columns[1].number_input("Permutations B", 10, 100_000, 1000, step=100, key="mp_b"))
    alpha = columns[2].select_slider("α", [0.001, 0.01, 0.05, 0.1], 0.05, key="mp_alpha")
    fdr = columns[3].select_slider("FDR of the per-prompt flags", [0.01, 0.05, 0.1, 0.2], 0.1, key="mp_fdr")
    st.caption(f"ω defaults to the {COMPARE_DISCREPANCY} distance: with 5 outputs per prompt it found the paper's "
               "GPT-3.5 → GPT-4 change in every one of 100 draws, the Jensen–Shannon divergence in 60 % "
               "(bench/bench_many.py). Outputs are embedded with MiniLM.")
    request = CompareRequest(tuple(map(str, files)), fmt, similarity="cosine", discrepancy=discrepancy,
                             n_resamples=n_resamples, seed=settings.seed, alpha=alpha, fdr=fdr)
    inputs = request_inputs(request, files=f"{', '.join(names)} ({digest})")
    if st.button("Run the test", type="primary", key="mp_run"):
        with st.spinner("Embedding the outputs and re-splitting within each prompt…"):
            keep("mp_result", inputs, run_compare(request, known_vectors=load_shipped_embeddings))
    with result_area("mp_result", inputs, how_to_update="Press **Run the test** to update it.") as shown:
        if shown.result is not None:
            result = shown.result
            test = result.test
            a, b = result.arms
            st.caption(f"Arms: {a} (original) → {b} (perturbed) · {test.n_prompts} prompts · B = "
                       f"{test.n_resamples:,}" + (" (every joint split: exact)" if test.exact else " random re-splits"))
            verdict_headline(plain_verdict(test.pvalue, alpha), current=shown.current)  # the headline (issue 45)
            cards = st.columns([1.4, 1])
            cards[0].metric("Decision" if shown.current else "Decision (out of date)", decision(test.pvalue, alpha))
            cards[1].metric("p-value", format_pvalue(test.pvalue, test.n_resamples, exact=test.exact))
            # In words, as text that wraps: a metric card cut "large: 5.9 × chance's spread" at 1024 px.
            st.markdown(f"**Effect beyond chance:** {effect_in_words(test.effect_size, test.standardized_effect)} "
                        f"(mean ω beyond chance {format_number(test.effect_size)})")
            for sentence in compare_readings(result):
                st.caption(sentence)
            if shown.current:
                decision_box(test.pvalue, alpha)
            for note in (*result.log.notes, *test.warnings):
                st.warning(note)
            rows = compare_table(result)
            frame = pd.DataFrame({
                "prompt": [" ".join(r["prompt"].split()) for r in rows],
                "q": [r["qvalue"] for r in rows], "p": [r["pvalue"] for r in rows],
                "ω beyond chance": [r["effect_size"] for r in rows],
                f"k {a}": [r["k"][a] for r in rows], f"k {b}": [r["k"][b] for r in rows],
                "flagged": ["changed" if r["changed"] else "" for r in rows]})
            st.dataframe(frame, hide_index=True, key="mp_table",
                         column_config={"q": st.column_config.NumberColumn(format="%.3f"),
                                        "p": st.column_config.NumberColumn(format="%.3f"),
                                        "ω beyond chance": st.column_config.NumberColumn(format="%.4f")})
            st.caption(f"Sorted by q (Benjamini–Hochberg): a prompt is flagged when q ≤ {fdr:g}, so at most about "
                       f"{format_percent(fdr)} of flagged prompts are expected to be false alarms. A prompt's own p is its "
                       "permutation p-value alone; with 5 outputs per arm it cannot go below 1/252.")
            most_changed_clouds(result, rows[:6])
            what_changed(result, rows)
            downloads(table=frame, record=compare_record(result), name="many_prompts", current=shown.current)
            plan_next(result, repr(sorted(inputs.items())), alpha)
