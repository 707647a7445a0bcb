# The Ishiki Host image (docs/deploy.md): the host and every package under packages/, in a venv, run as a
# user without privileges. Build: docker build -t ishiki . ; run: see docs/deploy.md#docker.
#
#   /config   the config directory (ishiki.yaml, models.yaml, profiles/): a volume, read-only is enough
#   /data     the data directory (fact logs, memory.db, channel state): a volume; ISHIKI_DATA_DIR points at
#             it, for an ishiki.yaml that says `data_dir: ${ISHIKI_DATA_DIR:-data}`
ARG PYTHON_VERSION=3.11

# Build stage: the wheels of the host and of each package, then a venv with them and their dependencies.
# Nothing of it but the venv reaches the final image (no compilers, no pip cache, no sources).
FROM python:${PYTHON_VERSION}-slim AS build
# The packages to put in the image (folders, a shell pattern): all of them by default. WhatsApp's channel brings
# ~100 MB of dependencies (neonize, phonenumbers, pillow, cryptography); an image without it:
#   docker build --build-arg PACKAGES="packages/ishiki-channel-telegram packages/ishiki-ext-*" -t ishiki .
ARG PACKAGES="packages/*/"
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY ishiki_host ./ishiki_host
COPY packages ./packages
RUN pip wheel --no-deps --wheel-dir /wheels . ${PACKAGES} \
    && python -m venv /opt/ishiki \
    && /opt/ishiki/bin/pip install /wheels/*.whl

# Final stage: the same base (the venv's python links to it), the venv, the health check.
FROM python:${PYTHON_VERSION}-slim
RUN useradd --system --user-group --uid 10001 --home-dir /data --no-create-home --shell /usr/sbin/nologin ishiki \
    && mkdir -p /config /data \
    && chown ishiki:ishiki /config /data
COPY --from=build /opt/ishiki /opt/ishiki
COPY deploy/healthcheck.py /opt/ishiki/healthcheck.py
ENV PATH=/opt/ishiki/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ISHIKI_DATA_DIR=/data
USER ishiki
WORKDIR /config
VOLUME ["/config", "/data"]
# Only when ishiki.yaml says `http: {listen: 0.0.0.0:8080}` (webhooks, the dashboard, /metrics).
EXPOSE 8080
# `ishiki run` stops cleanly on SIGTERM: running turns get shutdown_grace_seconds, then the runtimes close.
# Give `docker stop` more than that grace (docker stop -t 40).
STOPSIGNAL SIGTERM
# GET /healthz when http.listen is set; exits 0 at once when it is not (deploy/healthcheck.py).
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "/opt/ishiki/healthcheck.py", "/config"]
ENTRYPOINT ["ishiki"]
CMD ["run", "/config"]
