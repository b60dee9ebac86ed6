"""The one client of the other Arrowhead systems of the local cloud (issue 30; docs/local-cloud.md
"Other systems"): the ServiceRegistry, Authentication, ConsumerAuthorization and Blacklist.

Shared by every system's calls, each in one place:
- `exchange`: the HTTP request and its answer (JSON, the Java clients' headers, timeout, TLS,
  no proxy);
- `errors`: how a failure maps to our exceptions (503 naming the system, or a peer's refusal);
- `identity`: our identity on a call, and the one retry with a fresh identity token;
- `cache`: where a system was found, and for how long that is believed.

Per system, the calls it offers: `serviceregistry`, `authentication`, `peers` (any operation
found through the ServiceRegistry or an explicit URL), `consumer_authorization`, `blacklist`.

What to make of an answer (who a caller is, whether a provider may be offered, what to cache)
is the business of identity/, serviceregistry/ and orchestration/, which import this package;
it imports none of them. Our identity token comes from identity as a callable
(`identity.identity_token_source`). Not a Django app: no models.
"""
