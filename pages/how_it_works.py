"""How it works: a first look at the DBPA test on simulated embeddings."""

import numpy as np
import streamlit as st

import dbpa_core as d
from dbpa_core.reporting import decision, read_decision, read_pvalue

st.title("Distribution-based perturbation analysis")
st.write(
    "Sample many outputs for the original and the perturbed prompt, embed them, and ask whether the "
    "perturbation changed the *distribution* of outputs (Rauba, Wei & van der Schaar, ICML 2025)."
)
k = st.slider("Samples per arm (k)", 5, 100, 40)
shift = st.slider("True size of the perturbation's effect", 0.0, 1.0, 0.3, step=0.05)
alpha = st.select_slider("Significance level α", options=[0.001, 0.01, 0.05, 0.1], value=0.05)
n_resamples = st.select_slider("Permutations B", options=[200, 800, 2000, 10000], value=800)

rng = np.random.default_rng(0)
centre = np.eye(16)[0] * 2
x = centre + 0.3 * rng.normal(size=(k, 16))
y = centre + shift * np.eye(16)[1] + 0.3 * rng.normal(size=(k, 16))
result = d.dbpa_test(x, y, n_resamples=n_resamples, rng=1)

columns = st.columns(3)
columns[0].metric("Observed ω (JSD)", f"{result.statistic:.4f}")
columns[1].metric("p-value", f"{result.pvalue:.4f}")
columns[2].metric("Decision", decision(result.pvalue, alpha))
st.caption(read_pvalue(result.pvalue, result.n_resamples))
st.caption(read_decision(result.pvalue, alpha))
