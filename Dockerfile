# The worker image: `manage.py runworker` by default. The timers (sweep, reconcile,
# trial_sweep) run the same image with another command; see deploy/worker-service.yaml.
FROM python:3.12-slim

# git: the repository jobs clone and fetch with it. Debian's current git in the base
# image's release; pinning a Debian revision would break the build at its next update.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    VAR_DIR=/app/var

WORKDIR /app

# Production requirements only (tests and tools are in requirements-dev.txt), in their own
# layer so a code change does not reinstall them.
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
# The project's bytecode, compiled now: with PYTHONDONTWRITEBYTECODE (and /app read-only to
# user 10001) every worker would otherwise compile its modules again at each start.
RUN python -m compileall -q config jobs language_models pipeline workspaces
RUN useradd --create-home --uid 10001 --user-group app \
    && mkdir -p /app/var \
    && chown app:app /app/var
# Numeric, so a platform that insists on a non-root user (runAsNonRoot) can tell.
USER 10001:10001

# ECS stops a task with this signal, then SIGKILL after the container's stopTimeout (120 s).
# On SIGTERM runworker stops claiming, lets running jobs finish and puts back what is left.
STOPSIGNAL SIGTERM
CMD ["python", "manage.py", "runworker"]
