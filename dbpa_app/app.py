"""DBPA Explorer: the routing table and the shared sidebar.  Pages live in views/; logic in dbpa_core."""

from pathlib import Path

import streamlit as st

from dbpa_app.ui.lesson import presenting
from dbpa_app.ui.resources import import_figure_libraries
from dbpa_app.ui.sidebar import draw_shared

# A local favicon: a Material icon or emoji as page_icon is fetched from the internet, which fails offline.
# Presentation mode (?present=1) opens with the sidebar collapsed.
st.set_page_config(page_title="DBPA Explorer", page_icon=str(Path(__file__).parent / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if presenting() else "auto")

home = st.Page("views/how_it_works.py", title="How it works", icon=":material/school:", default=True)
pages = {
    "Learn": [home],
    "Audit": [
        st.Page("views/audit_one.py", title="Audit one perturbation", icon=":material/search:"),
        st.Page("views/many_perturbations.py", title="Many perturbations", icon=":material/table_chart:"),
        st.Page("views/many_prompts.py", title="Across many prompts", icon=":material/stacks:"),
        st.Page("views/tpr_fpr.py", title="TPR / FPR", icon=":material/show_chart:"),
        st.Page("views/alignment.py", title="Alignment with a reference", icon=":material/compare_arrows:"),
        st.Page("views/byo_samples.py", title="Bring your own samples", icon=":material/upload_file:"),
    ],
    "Case studies": [
        st.Page("views/persona_study.py", title="Persona study", icon=":material/theater_comedy:"),
        st.Page("views/reproduce.py", title="Reproduce the paper", icon=":material/history_edu:"),
    ],
    "Sibling audits": [
        st.Page("views/model_audit.py", title="Is this the claimed model?", icon=":material/fact_check:"),
        st.Page("views/stability.py", title="Stability under shift", icon=":material/balance:"),
    ],
}
navigation = st.navigation(pages)
if navigation is not home:  # the home page draws its verdict strip first, then these (issue 45)
    import_figure_libraries()
    draw_shared()
navigation.run()
