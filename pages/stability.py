"""OT stability: how costly a shift makes the model fail this often? (Liu, Li, Cui & Blanchet)."""

import numpy as np
import pandas as pd
import streamlit as st

from dbpa_core.stability.rewrites import REWRITES
from dbpa_core.stability.criterion import COSTS
from dbpa_core.present.figures import stability_curves
from ui.components import downloads, guard
from ui.runs import shared_figure
from ui.stability import RATIOS, RISKS, stability_view
from ui.sidebar import current_settings

settings = current_settings()
st.title("Stability under distribution shift")
st.write("Sixteen questions with known answers, each also asked in four rewritten ways "
         f"({', '.join(REWRITES.values())}). The stability criterion R(r) is the price of the cheapest shift — "
         "rewriting questions (cost θ₁ per unit of embedding distance) and re-weighting which questions are asked "
         "(cost θ₂ per unit of KL divergence) — that pushes the model's error rate up to r. Higher R: more stable.")

with guard():
    columns = st.columns(3)
    cost = columns[0].selectbox("Perturbation cost d", list(COSTS), key="stab_cost",
                                help="cosine_length: (1 − cosine similarity of the embeddings) + 0.5·|log length "
                                     "ratio|. A distance: zero for no change, growing with the change.")
    theta = columns[1].number_input("θ₁ = θ₂", 0.05, 20.0, 1.0, 0.05, key="stab_theta")
    r_fixed = columns[2].slider("Risk level r for the θ-ratio curve", 0.05, 1.0, 0.6, 0.05, key="stab_r")
    view = stability_view(cost, float(theta), float(r_fixed), settings.embedder, settings.keys.embedder)
    data = view.data
    summary = pd.DataFrame({
        "model / setting": list(data),
        "error rate on the original questions": [d.losses[:, 0].mean() for d in data.values()],
        "error rate on the rewrites": [d.losses[:, 1:].mean() for d in data.values()],
        f"R at r = {r_fixed:g}": [view.criteria[name].value for name in data],
    })
    st.dataframe(summary, hide_index=True, width="stretch")
    st.caption("R = 0 means the model already errs that often without any shift; R = ∞ would mean no rewrite can "
               "make it fail. Compare rows: the larger R at the same r, the more stable the setting.")
    left, right = st.columns(2)
    left.plotly_chart(shared_figure(stability_curves, view.curves, RISKS, x_title="target error rate r",
                                    title=f"R against r at θ₁ = θ₂ = {theta:g}"), width="stretch",
                      key="stab_r_curve")
    left.caption("Each curve rises from 0 at the model's own error rate: the steeper, the more a shift must cost "
                 "to make it fail more.")
    right.plotly_chart(shared_figure(stability_curves, view.ratio_curves, RATIOS, x_title="θ₁ / θ₂ (price of "
                                     "rewriting ÷ price of re-weighting)", title=f"R against θ₁/θ₂ at r = {r_fixed:g}",
                                     log_x=True),
                       width="stretch", key="stab_ratio_curve")
    right.caption("Left: rewriting is cheap, so R measures sensitivity to rewrites; right: re-weighting is cheap, "
                  "so R measures how unevenly errors spread over the questions.")

    st.subheader("Most sensitive samples")
    setting = st.selectbox("Model / setting", list(data), key="stab_setting")
    chosen = data[setting]
    result = view.criteria[setting]
    order = np.argsort(-result.weights)
    kinds = ("original", *chosen.rewrites)
    table = pd.DataFrame({
        "question": [chosen.questions[i] for i in order],
        "weight in the worst-case distribution": result.weights[order],
        "chosen perturbation": [kinds[result.choices[i]] for i in order],
        "prompt as perturbed": [chosen.prompts[i, result.choices[i]] for i in order],
        "model answer": [chosen.answers[i, result.choices[i]] for i in order],
        "fails": [bool(chosen.losses[i, result.choices[i]]) for i in order],
    })
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(f"The cheapest way to reach an error rate of {r_fixed:g} costs R = {result.value:.3g}: it up-weights "
               "the questions at the top and asks each in the shown form. Answers are shown as text.")
    downloads(table=table, name="stability_sensitive_samples")
