"""Membership in an Arrowhead local cloud through its ServiceRegistry (docs/local-cloud.md):
the client of the ServiceRegistry (`client`), the services this system publishes there
(`published`), and their registration at start-up and revocation at shutdown (`registration`).
Not a Django app: it has no models, and the gunicorn master uses it without setting Django up."""
