# syntax=docker/dockerfile:1
# gang-scheduler container image: `gang-scheduler run` as a non-root user on a read-only root
# filesystem. Build from the repository root:
#   docker build -t gang-scheduler:0.1.0 .
# Stage 1 builds a wheel of this repository and collects the wheels of its dependencies; stage 2
# installs exactly those wheels with --no-index (nothing else is fetched) and carries no build
# tools. The running container needs no network but the API server's.

FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
RUN python -m pip wheel --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
# HOME: kubernetes-asyncio resolves ~/.kube/config at import and fails without a home
# directory; a UID other than 65532 (runAsUser) has no passwd entry, so HOME is set here.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    HOME=/nonexistent
# Only the wheels built above: --no-index keeps pip off the network. pip compiles the
# bytecode now, so nothing is written at run time.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels gang-scheduler \
 && groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot
USER 65532:65532
WORKDIR /
# /healthz, /readyz and /metrics (GANG_SCHEDULER_BIND_ADDRESS, default 0.0.0.0:10251).
EXPOSE 10251
ENTRYPOINT ["gang-scheduler", "run"]
