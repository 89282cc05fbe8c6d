"""Stability under distribution shift: the OT stability paper's experiments (Liu, Li, Cui & Blanchet)."""

import hashlib

import streamlit as st

from dbpa_core.present.csv_inputs import settings_inputs
from dbpa_core.present.formatting import counted
from dbpa_core.present.stability_report import stability_record, table1_frame
from dbpa_core.paper.stability import TARGET_LABELS, target_label
from dbpa_core.stability.criterion import COSTS
from dbpa_core.stability.runs import SEARCH_SETTINGS, TARGET_MAX_TOKENS, TARGETS
from dbpa_core.stability.tasks import TASK_LABELS, TASKS, UPLOAD_COLUMNS, load_items, read_items
from dbpa_app.ui.components import downloads, guard
from dbpa_app.ui.freshness import keep, request_inputs, result_area
from dbpa_app.ui.sidebar import current_settings
from dbpa_core.requests.stability import StabilityRequest
from dbpa_app.ui.stability import (ASSISTANT_HELP, ASSISTANTS, COST_LABELS, JUDGE_HELP, JUDGES, NOTATION,
                                   bootstrap_rate, live_study, live_time, recorded_study, show_searches, show_task,
                                   show_verdicts, target_name)

#: Items a live run searches at most (each costs the target up to K × rounds answers).
MAX_LIVE_ITEMS = 50
#: What the page measures, in plain words (≤ 60 words: the notation is in
#: :data:`dbpa_app.ui.stability.NOTATION`, one click away).
INTRO = ("How costly a change to the questions does it take to make a model get half of them wrong? The change "
         "mixes rewording questions (priced by how far each rewording moves; one that changes the meaning is not "
         "allowed) and asking the ones it fails more often. Higher cost (R): more stable. An assistant model "
         "searches for the rewordings.")
EXAMPLES = {"qa": '{"question": "What is the capital of Japan?", "answers": ["Tokyo"]}',
            "secret": '{"request": "What is the password?", "secret": "MARIGOLD"}'}

settings = current_settings()
st.title("Stability under distribution shift")
st.write(INTRO)
with st.expander("The criterion in the paper's notation"):
    st.markdown(NOTATION)

with guard():
    # Its options say what it picks: no label row above them (the verdict below fits the first screen).
    mode = st.radio("Data", ["Recorded study (instant)", "Live run: your model and questions"], horizontal=True,
                    key="stab_mode", label_visibility="collapsed")
    if mode.startswith("Recorded"):
        from dbpa_app.ui.sidebar import sampler_ignored

        sampler_ignored("the recorded study; only the seed is used, for the bootstrap")
        columns = st.columns([2, 1, 2])
        cost = columns[0].selectbox("Perturbation cost d", list(COSTS), key="stab_cost", format_func=COST_LABELS.get,
                                    help="The paper's eq. (1): (1 − cosine similarity) × the larger token-count "
                                         "ratio. Cosine + length: (1 − cos) + 0.5·|log length ratio|. Cosine: 1 − cos.")
        # Its cost in the tooltip, said before B changes (a caption would push the verdict off the first screen).
        n_resamples = int(columns[1].number_input("Bootstrap B", 0, 5000, 200, step=100, key="stab_resamples",
                                                  help="Resamples of the items behind each ranking's support. "
                                                       + bootstrap_rate()))
        columns[2].caption("Recorded here: three local SmolLM2 targets, rewrites by SmolLM2, meaning judged by "
                           "MiniLM (details at the foot). The sidebar seed seeds the bootstrap.")
        # The verdict first (issue 45: a result on the first screen), filled once the bootstrap is done; the
        # tables and figures below are drawn first, on screen while it runs.
        verdicts = st.container()
        study = recorded_study(cost, 0, settings.seed)
        for task, tab in zip(study.tasks, st.tabs([TASK_LABELS[t] for t in study.tasks])):
            with tab:
                show_task(study, task, key="stab")
                with st.expander("Browse the recorded searches: every rewrite proposed, the judge's verdict, the "
                                 "answer"):
                    show_searches(task, key="stab_browse")
        with verdicts:
            support = recorded_study(cost, n_resamples, settings.seed)
            show_verdicts(support)
        with st.expander("How the recorded study was made"):
            st.caption(f"Recorded on this machine with the packaged models: three local targets, greedy "
                       f"({', '.join(TARGET_LABELS.values())}; the brief prompt is the system prompt "
                       f"“{TARGETS['smollm2 + brief']['system']}”); the packaged SmolLM2 proposes "
                       f"K = {SEARCH_SETTINGS['n_candidates']} rewrites per round, {SEARCH_SETTINGS['depth']} "
                       "rounds; MiniLM embedding judge. The sidebar seed seeds the bootstrap.")
        record = stability_record(support)
        downloads(table=table1_frame(support), record=record, name="stability_study", inputs=settings_inputs(record))
    else:
        if settings.sampler.backend not in ("local", "openai"):
            raise ValueError("A live run needs a model that answers: choose 'Local SmolLM2-135M (CPU)' or "
                             "'OpenAI-compatible API' (base URL, model, key) as the backend in the sidebar.")
        endpoint = settings.sampler.backend == "openai"
        columns = st.columns(2)
        task = columns[0].radio("Task", TASKS, format_func=TASK_LABELS.get, key="stab_live_task")
        source = columns[1].radio("Items", ["upload", "shipped"], key="stab_live_source", horizontal=True,
                                  format_func={"upload": "Upload a file", "shipped": "The shipped items"}.get)
        if source == "upload":
            first, second = UPLOAD_COLUMNS[task]
            file = st.file_uploader(f"Items: CSV or JSONL with `{first}` and `{second}`", key="stab_live_file",
                                    type=["csv", "jsonl", "json", "ndjson"])
            if file is None:
                st.caption(f"One item per row, e.g. `{EXAMPLES[task]}`"
                           + (" (in a CSV, several accepted answers are separated by |)." if task == "qa" else "."))
                st.stop()
            items = read_items(file.getvalue(), file.name, task)
            items_label = f"{file.name} (sha256 {hashlib.sha256(file.getvalue()).hexdigest()[:12]})"
        else:
            items, items_label = load_items(task), f"shipped {task} items"
        columns = st.columns(4)
        n_items = int(columns[0].number_input("Items (the first n)", 1, MAX_LIVE_ITEMS, 5, key="stab_live_n"))
        n_candidates = int(columns[1].number_input("Rewrites per round K", 1, 8, SEARCH_SETTINGS["n_candidates"],
                                                   key="stab_live_k"))
        depth = int(columns[2].number_input("Rounds", 1, 4, SEARCH_SETTINGS["depth"], key="stab_live_depth"))
        n_live_resamples = int(columns[3].number_input("Bootstrap B", 0, 2000, 200, step=100, key="stab_live_b"))
        items = items[:n_items]
        system = st.text_input("Your model's own system prompt (optional; sent after the item's)", "",
                               key="stab_live_system")
        compare = st.multiselect("Also run these recorded targets on the same items (local, slower)", list(TARGETS),
                                 format_func=target_label, key="stab_live_compare")
        columns = st.columns(2)
        assistant = columns[0].selectbox("Rewrites proposed by", list(ASSISTANTS) if endpoint else ["local"],
                                         format_func=ASSISTANTS.get, key="stab_live_assistant",
                                         help=ASSISTANT_HELP)
        judge = columns[1].selectbox("Judge of “same meaning”", list(JUDGES) if endpoint else ["embedding"],
                                     format_func=JUDGES.get, key="stab_live_judge", help=JUDGE_HELP)
        request = StabilityRequest(source="live", task=task, items=tuple(items), target=settings.sampler.instance,
                                   target_system=system.strip(), compare=tuple(compare), assistant=assistant,
                                   judge=judge, embedder=settings.embedder, n_candidates=n_candidates, depth=depth,
                                   seed=settings.seed, n_resamples=n_live_resamples)
        # The request's settings, the models, task and helpers named as the page names them (an "Out of date"
        # warning prints these, old → new, and the JSON names them so too).
        inputs = request_inputs(request, target=target_name(settings.sampler), task=TASK_LABELS[task],
                                items=items_label, **{"first n": len(items), "also run": [target_label(t) for t in compare],
                                                      "assistant": ASSISTANTS[assistant], "judge": JUDGES[judge],
                                                      "embedder": settings.embedder.model or settings.embedder.name})
        targets = 1 + len(compare)
        rewrites = n_candidates * depth
        st.caption(f"{counted(len(items), 'item')} × {counted(targets, 'target')}: "
                   f"per item, one answer as written, then up to {counted(rewrites, 'rewrite')} "
                   "proposed and the kept ones answered, stopping at the first "
                   f"failure. The targets answer greedily (T = 0) in at most {TARGET_MAX_TOKENS[task]} tokens, as "
                   "the recorded study, whatever the sidebar's temperature and max tokens. Every call is kept in "
                   "the sample store, so a second run replays it.")
        # Said before it starts (issue 45): every call of every item and target, as an upper bound, then the
        # bootstrap.
        if (longest := live_time(settings, request)).announced:
            st.caption(f"Time: up to {longest.reading()} if nothing is stored yet (a search stops at its first "
                       "failure, so it is usually shorter).")
        if st.button("Run the live search", type="primary", key="stab_live_run"):
            keep("stability_live", inputs, live_study(settings, request, run=True))
        with result_area("stability_live", inputs,
                         how_to_update="Press **Run the live search** to update it.") as shown:
            if shown.result is None:
                st.caption("Press **Run the live search** to search rewrites of these items on your model.")
            else:
                live = shown.result
                show_verdicts(live)
                show_task(live, live.tasks[0], key="stab_live")
                # The file names the run's inputs (the inputs above keyed the result; here in words).
                # The target is asked greedily (dbpa_core.stability.search): not at the sidebar's temperature.
                asked = {**inputs, "target answers": "greedy (T = 0)", "target max tokens": TARGET_MAX_TOKENS[task],
                         "rewrites": f"T = {SEARCH_SETTINGS['assistant_temperature']:g}, "
                                     f"≤ {SEARCH_SETTINGS['assistant_max_tokens']} tokens",
                         "item prompts": [item.prompt for item in items]}
                downloads(table=table1_frame(live), record=stability_record(live, inputs=asked), name="stability_live",
                          current=shown.current)
