"""The one client of the other Arrowhead systems of the local cloud (issue 30; docs/local-cloud.md
"Other systems"): the ServiceRegistry, Authentication, ConsumerAuthorization and Blacklist. One
exchange, one error mapping, one identity header and one cache policy (a module each), then the
calls each system offers (a module per system; `peers` for any operation found through the
ServiceRegistry or an explicit URL). What to make of an answer is the business of the packages
that import this one (identity/, serviceregistry/, orchestration/); our identity token comes
from identity as a callable (`identity.identity_token_source`). Not a Django app: no models.
"""
