"""Bring your own samples: upload outputs (or embeddings) of two arms and test them."""

import numpy as np
import streamlit as st

from dbpa_core.audit import Arm, compare_arms
from dbpa_core.stats.discrepancy import DISCREPANCY_NAMES
from dbpa_core.data.uploads import MAX_BYTES, MAX_ROWS, read_samples
from dbpa_core.present.readings import result_to_dict
from dbpa_core.stats.similarity import SIMILARITIES
from ui.components import clouds, downloads, guard, null_and_similarities, result_strip
from ui.resources import embedder_for, store

settings = st.session_state["settings"]
st.title("Bring your own samples")
st.write(f"Upload one CSV or JSONL file with a column `arm` (two values: original and perturbed) and a column "
         f"`text` — or `embedding` (a JSON list of numbers) to skip embedding. Up to {MAX_BYTES // 2**20} MB and "
         f"{MAX_ROWS:,} rows.")
st.code('{"arm": "original", "text": "Stop smoking and take a statin."}\n'
        '{"arm": "perturbed", "text": "Why did the statin cross the road?"}', language="json")

with guard():
    upload = st.file_uploader("Samples file", type=["csv", "jsonl", "json", "ndjson"], key="byo_file")
    if upload is None:
        st.caption("No file yet: upload one to run the test.")
        st.stop()
    table = read_samples(upload.getvalue(), upload.name)
    if len(table.arms) != 2:
        raise ValueError(f"{upload.name}: column `arm` must have exactly two values (original and perturbed); "
                         f"found {len(table.arms)}: {', '.join(table.arms[:5])}.")
    columns = st.columns(5)
    original_name = columns[0].selectbox("Original arm", table.arms, key="byo_original")
    perturbed_name = [a for a in table.arms if a != original_name][0]
    columns[0].caption(f"Perturbed arm: {perturbed_name}")
    similarity = columns[1].selectbox("Similarity", SIMILARITIES, key="byo_similarity")
    discrepancy = columns[2].selectbox("ω", DISCREPANCY_NAMES, key="byo_discrepancy")
    n_resamples = int(columns[3].number_input("Permutations B", 10, 100_000, 1000, step=100, key="byo_b"))
    alpha = columns[4].select_slider("α", [0.001, 0.01, 0.05, 0.1], 0.05, key="byo_alpha")
    st.caption(f"{len(table.texts[original_name])} original and {len(table.texts[perturbed_name])} perturbed outputs"
               + (" with embeddings from the file." if table.embeddings else "; they will be embedded with the "
                  "sidebar's embedder."))

    if st.button("Run the test", type="primary", key="byo_run"):
        if table.embeddings is not None:
            vectors = table.embeddings
            if vectors[original_name].shape[1] != vectors[perturbed_name].shape[1]:
                raise ValueError("The two arms' embeddings have different lengths; embed both with the same model.")
        else:
            embedder = embedder_for(settings.embedder)
            vectors = {arm: embedder.embed(table.texts[arm], store=store()) for arm in (original_name, perturbed_name)}
        arms = [Arm(name, "", "", tuple(table.texts[name]), np.asarray(vectors[name]), "uploaded")
                for name in (original_name, perturbed_name)]
        st.session_state["byo_result"] = compare_arms(*arms, label=perturbed_name, similarity=similarity,
                                                      discrepancy=discrepancy, n_resamples=n_resamples,
                                                      rng=settings.seed)
    result = st.session_state.get("byo_result")
    if result is not None:
        result_strip(result.test, alpha, label=discrepancy)
        clouds(result.original, result.perturbed, method="pca", key="byo_clouds")
        null_and_similarities(result.test, label=discrepancy, key="byo")
        downloads(record=result_to_dict(result.test, file=upload.name, original_arm=result.original.label,
                                        perturbed_arm=result.perturbed.label), name="byo_result")
