from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ArrowheadAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "identity.authentication.ArrowheadAuthentication"
    name = "arrowheadIdentity"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`SYSTEM//<SystemName>` under the declared policy; "
            "`IDENTITY-TOKEN//<token>` under the token policy (a token this service issued) "
            "and the outsourced policy (verified by the Authentication system). Under the "
            "certificate policy the TLS client certificate identifies the system and this "
            "header is not read.",
        }
