# The service image: `make run`'s steps for one process (docs/deployment.md). compose.yaml
# runs web, worker, beat and the MQTT interface from it.
FROM python:3.11-slim
WORKDIR /app
# nginx in front of gunicorn (config/front.py): slow clients, limits, TLS.
RUN apt-get update && apt-get install -y --no-install-recommends nginx-light \
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# A fixed uid: the Kubernetes manifests run as it (deploy/kubernetes/, runAsUser).
RUN useradd --create-home --uid 1000 app && mkdir -p var && chown app var
USER app
RUN python manage.py collectstatic --noinput --verbosity 0
# Reachable from other hosts, so not the declared policy (docs/identity.md).
ENV HOST=0.0.0.0 AUTHENTICATION_POLICY=token
EXPOSE 8465
CMD ["gunicorn", "--config", "python:config.gunicorn", "config.wsgi"]
