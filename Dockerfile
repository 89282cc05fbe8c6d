# DBPA Explorer for a classroom or a demo: the app on its embedded defaults (simulated and recorded
# samplers, the packaged MiniLM embedder). No compiler, no API key, nothing downloaded at run time.
#
#   docker build -t dbpa-explorer .
#   docker run --rm -p 8501:8501 dbpa-explorer          # then open http://localhost:8501
#
# Add an OpenAI-compatible endpoint at run time with -e OPENAI_API_KEY=... (the sidebar takes the base URL).
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DBPA_STORE=/data/store.sqlite HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
RUN useradd --create-home --uid 1000 dbpa && mkdir /data && chown dbpa /data
WORKDIR /src
COPY pyproject.toml requirements.txt README.md LICENSE ./
COPY dbpa_core ./dbpa_core
COPY dbpa_app ./dbpa_app
# torch's CPU build first (the CUDA build is several GB and a classroom server has no GPU).
RUN python -m pip install --index-url https://download.pytorch.org/whl/cpu "torch==$(sed -n 's/^torch==//p' requirements.txt)" \
 && python -m pip install -c requirements.txt ".[app]" \
 && python -m pip check
USER dbpa
EXPOSE 8501
VOLUME /data
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["dbpa", "app", "--server.headless", "true", "--server.address", "0.0.0.0", "--server.port", "8501"]
