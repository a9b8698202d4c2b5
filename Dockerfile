# faultgate-stream's image: `faultgate-stream serve`, non-root, read-only-root friendly.
#
#   docker build -t faultgate-stream .
#   docker run -p 4317:4317 -p 4318:4318 -p 9464:9464 faultgate-stream [--config /etc/faultgate-stream/config.yaml]
#
# Not built here: building needs a registry that serves the python base image (Docker
# Hub), which the machine this was written on cannot reach, and it has no container
# engine. tests/deploy/test_dockerfile.py lints this file with hadolint instead.

# ---- wire: the package as a wheel, its compiled reader (native/) built with Rust by
# maturin, in maturin's own image (Rust, a linker and every CPython; abi3, so any 3.11+)
FROM ghcr.io/pyo3/maturin:v1.7.4 AS wire
WORKDIR /src
COPY pyproject.toml README.md ./
COPY native ./native
COPY faultgate_stream ./faultgate_stream
# Built without the profile scripts/setup.sh builds with (scripts/native_profile.sh: an
# instrumented build trained on the bundled examples): correct the same, about 13% more
# instructions per live span.
RUN maturin build --release --out /wheels

# ---- build: a virtualenv with that wheel and its dependencies (wheels where there are)
FROM python:3.12-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=wire /wheels /wheels
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --prefer-binary /wheels/*.whl \
 && /opt/venv/bin/pip uninstall --yes pip setuptools

# ---- run: the base image plus that virtualenv; no compiler, no pip, no sources
FROM python:3.12-slim-bookworm
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin faultgate
COPY --from=build /opt/venv /opt/venv
# metrics and probes bind to loopback by default; inside a container that is the
# container's own, so they listen on every interface here for -p 9464 and the probes
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    FAULTGATE_STREAM__METRICS__ENDPOINT=0.0.0.0:9464
USER 10001:10001
# OTLP/gRPC (and the verdict stream), OTLP/HTTP, /metrics /healthz /readyz
EXPOSE 4317 4318 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2)"]
ENTRYPOINT ["faultgate-stream", "serve"]
