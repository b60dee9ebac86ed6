"""Membership in an Arrowhead local cloud through its ServiceRegistry (docs/local-cloud.md):
the client of the ServiceRegistry (`client`), the services this system publishes there
(`published`), their registration at start-up and revocation at shutdown (`registration`),
provider instances for pull (`instances`) and the polling that turns their changes into pushes
(`polling`, its one model and beat task). The gunicorn master uses `client`, `published` and
`registration` without setting Django up: they import no models."""
