# syntax=docker/dockerfile:1
# gang-scheduler container image: `gang-scheduler run` as a non-root user on a read-only root
# filesystem. Build from the repository root:
#   docker build -t gang-scheduler:0.1.0 .
# Stage 1 downloads the dependencies at the versions and hashes of requirements.lock (the versions the
# test suite ran with: `make lock`) and builds a wheel of this repository; stage 2 installs exactly
# those wheels with --no-index (nothing else is fetched), then removes pip, and carries no build
# tools. The running container needs no network but the API server's.
#
# The base image is pinned by digest, so a rebuild gets the same Python and Debian packages. To move
# to a newer python:3.11-slim-bookworm, read its digest (`docker buildx imagetools inspect
# python:3.11-slim-bookworm`, the index digest that covers every platform) and replace it in both
# FROM lines and in the base.digest label.

FROM python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91 AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY requirements.lock ./
# Every dependency is pinned with its hashes: pip refuses anything else (--require-hashes).
RUN python -m pip wheel --require-hashes --wheel-dir /wheels -r requirements.lock
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
RUN python -m pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91
LABEL org.opencontainers.image.title="gang-scheduler" \
      org.opencontainers.image.description="An all-or-nothing Kubernetes scheduler for PodGroup and CompositePodGroup gangs (v1.37 APIs)." \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim-bookworm" \
      org.opencontainers.image.base.digest="sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91"
# HOME: kubernetes-asyncio resolves ~/.kube/config at import and fails without a home
# directory; a UID other than 65532 (runAsUser) has no passwd entry, so HOME is set here.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    HOME=/nonexistent
# Only the wheels built above: --no-index keeps pip off the network, and they are the locked versions.
# pip compiles the bytecode now, so nothing is written at run time. Then pip (and the setuptools and
# wheel the base image ships) is removed: nothing installs anything at run time.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels gang-scheduler \
 && python -m pip uninstall --yes pip setuptools wheel \
 && rm -rf /usr/local/lib/python3.11/ensurepip \
 && groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot
USER 65532:65532
WORKDIR /
# /healthz, /readyz and /metrics (GANG_SCHEDULER_BIND_ADDRESS, default 0.0.0.0:10251).
EXPOSE 10251
ENTRYPOINT ["gang-scheduler", "run"]
