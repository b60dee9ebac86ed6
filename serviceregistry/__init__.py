"""Membership in an Arrowhead local cloud through its ServiceRegistry (docs/local-cloud.md):
the services this system publishes there (`published`), their registration at start-up and
revocation at shutdown (`registration`), provider instances for pull (`instances`) and the
polling that turns their changes into catalog changes (`polling` and its one model; the beat
task that runs it is the subscriptions app's). The calls themselves are clients.serviceregistry.
The gunicorn master uses `published` and `registration` without setting Django up: they import
no models."""
