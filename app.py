"""DBPA Explorer: the routing table.  Pages live in pages/; logic in dbpa_core."""

import streamlit as st

st.set_page_config(page_title="DBPA Explorer", layout="wide")

pages = {
    "Learn": [st.Page("pages/how_it_works.py", title="How it works", default=True)],
}
st.navigation(pages).run()
