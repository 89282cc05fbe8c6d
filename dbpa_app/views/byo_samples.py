"""Bring your own samples: upload outputs (or embeddings) of two arms and test them."""

import hashlib

import streamlit as st

from dbpa_core.present.formatting import discrepancy_symbol
from dbpa_core.stats.decision import declares_change
from dbpa_core.data.uploads import MAX_BYTES, MAX_ROWS, MAX_SAMPLES, read_samples
from dbpa_core.stats.discrepancy import DISCREPANCY_NAMES
from dbpa_core.stats.similarity import SIMILARITIES
from dbpa_app.ui.components import (clouds, guard, null_and_similarities, result_downloads, result_strip)
from dbpa_app.ui.changes import what_changed
from dbpa_app.ui.freshness import keep, request_inputs, result_area
from dbpa_app.ui.requests import two_sample_request, two_sample_result
from dbpa_app.ui.runs import Audited, shared_call
from dbpa_app.ui.settings import EMBEDDER_LABELS
from dbpa_app.ui.sidebar import current_settings, sampler_ignored

settings = current_settings()
st.title("Bring your own samples")
st.write(f"Upload one CSV or JSONL file with a column `arm` (two values, e.g. original and perturbed: you choose "
         f"which is the original) and a column "
         f"`text` — or `embedding` (a JSON list of numbers) to skip embedding. Up to {MAX_BYTES // 2**20} MB and "
         f"{MAX_ROWS:,} rows, at most {MAX_SAMPLES:,} per arm.")
st.code('{"arm": "original", "text": "Stop smoking and take a statin."}\n'
        '{"arm": "perturbed", "text": "Why did the statin cross the road?"}', language="json",
        wrap_lines=True)  # at 1024 px the second line's closing brace was scrolled out of sight

sampler_ignored("it tests the outputs you upload")
with guard():
    upload = st.file_uploader("Samples file", type=["csv", "jsonl", "json", "ndjson"], key="byo_file")
    if upload is None:
        st.caption("No file yet: upload one to run the test.")
        st.stop()
    table = shared_call(read_samples, upload.getvalue(), upload.name)  # parsed once per file, for everyone
    if len(table.arms) != 2:
        raise ValueError(f"{upload.name}: column `arm` must have exactly two values (e.g. original and perturbed); "
                         f"found {len(table.arms)}: {', '.join(table.arms[:5])}.")
    columns = st.columns(5)
    original_name = columns[0].selectbox("Original arm", table.arms, key="byo_original")
    perturbed_name = [a for a in table.arms if a != original_name][0]
    columns[0].caption(f"Perturbed arm: {perturbed_name}")
    similarity = columns[1].selectbox("Similarity", SIMILARITIES, key="byo_similarity")
    discrepancy = columns[2].selectbox("ω", DISCREPANCY_NAMES, key="byo_discrepancy")
    symbol = discrepancy_symbol(discrepancy)  # as cards, axes and reports name it ("JSD")
    n_resamples = int(columns[3].number_input("Permutations B", 10, 100_000, 1000, step=100, key="byo_b"))
    alpha = columns[4].select_slider("α", [0.001, 0.01, 0.05, 0.1], 0.05, key="byo_alpha")
    st.caption(f"{len(table.texts[original_name])} original and {len(table.texts[perturbed_name])} perturbed outputs"
               + (" with embeddings from the file." if table.embeddings else "; they will be embedded with the "
                  "sidebar's embedder."))
    for message in table.warnings:  # kept as they are, but said (as the command line says them)
        st.warning(message, icon=":material/warning:")

    # The sidebar's name for the embedder ("MiniLM-L6 (offline)", or the API's model), as on every page.
    embedded_by = ("from the file" if table.embeddings else
                   settings.embedder.model or EMBEDDER_LABELS.get(settings.embedder.name, settings.embedder.name))
    run = st.button("Run the test", type="primary", key="byo_run")
    # Refuses an arm too small or a text measure without texts (naming the fix) before anything is embedded.
    request = two_sample_request(settings, table, original_name, perturbed_name, similarity=similarity,
                                 discrepancy=discrepancy, n_resamples=n_resamples)
    # The request holds the file's rows, not its name: the warning names the file as the user knows it.
    file_id = f"{upload.name} (sha256 {hashlib.sha256(upload.getvalue()).hexdigest()[:12]})"
    inputs = request_inputs(request, file=file_id, embedder=embedded_by)
    if run:
        # The explanation is keyed by the request (the file's content, not its name): the same file shares it.
        keep("byo_result", inputs, Audited.of_two_sample(request, two_sample_result(settings, request)))
    with result_area("byo_result", inputs, how_to_update="Press **Run the test** to test this file.") as shown:
        if shown.result is not None:
            result = shown.result.result
            st.caption(f"Outputs: your file · seed {settings.seed} · "
                       + ("embeddings from the file" if table.embeddings else f"embedded by {embedded_by}"))
            result_strip(result.test, alpha, label=symbol, current=shown.current)
            coordinates = clouds(result.original, result.perturbed, method="pca", key="byo_clouds")
            null_and_similarities(result.test, label=symbol, key="byo")
            arms = (result.original.label, result.perturbed.label)
            changed = what_changed(shown.result, key="byo", declared=declares_change(result.test, alpha), arms=arms,
                                   coordinates=coordinates)
            result_downloads(result.test, alpha=alpha, label=symbol, name="byo_result",
                             title=f"DBPA test of {upload.name}", current=shown.current, explanation=changed,
                             arms=arms, file=upload.name, original_arm=arms[0], perturbed_arm=arms[1],
                             embedder=embedded_by, seed=settings.seed)
