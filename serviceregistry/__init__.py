"""Membership in an Arrowhead local cloud through its ServiceRegistry (docs/local-cloud.md); the
calls themselves are clients.serviceregistry. The gunicorn master uses `published` and
`registration` without setting Django up: they import no models."""
