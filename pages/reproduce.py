"""Reproduce the paper: its experiments on its own shipped responses, beside the reference run's numbers."""

import streamlit as st

from ui.components import guard
from ui.paper import EXPERIMENTS, SOURCE_NOTE, show_experiment

st.title("Reproduce the paper")
st.write(SOURCE_NOTE + " They are re-tested here with the packaged MiniLM embedder and this app's permutation "
         "test; the reference run's reported numbers stand beside ours.")

with guard():
    columns = st.columns([2, 1, 1])
    experiment = columns[0].radio("Experiment", list(EXPERIMENTS), format_func=EXPERIMENTS.get, horizontal=True,
                                  key="reproduce_experiment")
    n_resamples = int(columns[1].number_input("Permutations B", 100, 10_000, 1000, step=100, key="reproduce_b"))
    seed = int(columns[2].number_input("Seed of the tests", 0, 2**31 - 1, 0, key="reproduce_seed"))
    show_experiment(experiment, n_resamples, seed)
