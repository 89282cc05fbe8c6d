"""DBPA Explorer: the routing table and the shared sidebar.  Pages live in pages/; logic in dbpa_core."""

import streamlit as st

from ui.sidebar import interrupted_notice, sidebar

st.set_page_config(page_title="DBPA Explorer", page_icon=":material/query_stats:", layout="wide")

pages = {
    "Learn": [
        st.Page("pages/how_it_works.py", title="How it works", icon=":material/school:", default=True),
    ],
    "Audit": [
        st.Page("pages/audit_one.py", title="Audit one perturbation", icon=":material/search:"),
        st.Page("pages/many_perturbations.py", title="Many perturbations", icon=":material/table_chart:"),
        st.Page("pages/tpr_fpr.py", title="TPR / FPR", icon=":material/show_chart:"),
        st.Page("pages/alignment.py", title="Alignment with a reference", icon=":material/compare_arrows:"),
        st.Page("pages/byo_samples.py", title="Bring your own samples", icon=":material/upload_file:"),
    ],
    "Case studies": [
        st.Page("pages/persona_study.py", title="Persona study", icon=":material/theater_comedy:"),
        st.Page("pages/reproduce.py", title="Reproduce the paper", icon=":material/history_edu:"),
    ],
    "Sibling audits": [
        st.Page("pages/model_audit.py", title="Is this the claimed model?", icon=":material/fact_check:"),
        st.Page("pages/stability.py", title="Stability under shift", icon=":material/balance:"),
    ],
}
navigation = st.navigation(pages)
st.session_state["settings"] = sidebar()
interrupted_notice()
navigation.run()
