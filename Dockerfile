# faultgate-stream's image: `faultgate-stream serve`, non-root, read-only-root friendly.
#
#   docker build -t faultgate-stream .
#   docker run -p 4317:4317 -p 4318:4318 -p 9464:9464 faultgate-stream [--config /etc/faultgate-stream/config.yaml]
#
# Not built here: building needs a registry that serves the python base image (Docker
# Hub), which the machine this was written on cannot reach, and it has no container
# engine. tests/deploy/test_dockerfile.py lints this file with hadolint instead.

# ---- wire: the package as a wheel, built by scripts/build_wheel.sh as everywhere else: the
# abi3 manylinux_2_17 wheel (maturin with zig), its compiled core (native/) profile-guided
# (scripts/native_profile.sh trains it on the bundled examples in .venv), the examples
# inside it for `faultgate-stream demo`. Rust's image; Debian's python3 (3.11) for the tools.
FROM rust:1.95-slim-bookworm AS wire
# bookworm's own python3 (3.11) and venv, whatever its point release: a pinned Debian
# revision would stop installing at the next one
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY native ./native
COPY faultgate_stream ./faultgate_stream
COPY examples ./examples
COPY scripts ./scripts
RUN python3 -m venv .venv && bash scripts/build_wheel.sh --out /wheels

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
