"""Reproduce the paper: its experiments beside its printed values and the reference run's numbers."""

import streamlit as st

from dbpa_app.ui.components import guard
from dbpa_app.ui.paper import EXPERIMENTS, SOURCE_NOTE, SOURCES_NOTE, show_experiment
from dbpa_app.ui.sidebar import current_settings, sampler_ignored

current_settings()  # routes through app.py when the page is opened by its URL first

st.title("Reproduce the paper")
st.write(SOURCE_NOTE + " Figs 1–2 are also run in the paper's own setup on local models whose answers were "
         "recorded here.")
st.caption(SOURCES_NOTE + " The sidebar's backend, temperature, embedder and seed do not apply on this page: "
           "every experiment tests the paper's recorded answers with the packaged MiniLM, and the B and seed "
           "below.")

sampler_ignored("the paper's recorded data; only the seed is used")
with guard():
    columns = st.columns([2, 1, 1])
    experiment = columns[0].radio("Experiment", list(EXPERIMENTS), format_func=EXPERIMENTS.get, horizontal=True,
                                  key="reproduce_experiment")
    n_resamples = int(columns[1].number_input("Permutations B", 100, 10_000, 1000, step=100, key="reproduce_b"))
    seed = int(columns[2].number_input("Seed of the tests", 0, 2**31 - 1, 0, key="reproduce_seed"))
    show_experiment(experiment, n_resamples, seed)
