from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from conventions import names
from conventions.exceptions import InvalidParameter
from identity.services import identity_token_issue


class Command(BaseCommand):
    help = (
        "Issue an identity token for a system (created when new) and print it. Clients send it "
        "as `Authorization: Bearer IDENTITY-TOKEN//<token>` under AUTHENTICATION_POLICY=token."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("system_name")
        parser.add_argument("--operator", action="store_true",
                            help="mark the system identity as an operator (sysop)")
        parser.add_argument("--ttl", type=int, default=settings.IDENTITY_TOKEN_TTL_SECONDS,
                            help="validity in seconds (default: IDENTITY_TOKEN_TTL_SECONDS)")
        parser.add_argument("--description", default="")

    def handle(self, *args, **options) -> None:
        try:
            name = names.system_name(options["system_name"])
        except InvalidParameter as exc:
            raise CommandError(exc.message) from exc
        if options["ttl"] < 1:
            raise CommandError("--ttl must be a positive number of seconds")
        raw, token = identity_token_issue(
            system_name=name,
            operator=options["operator"],
            ttl_seconds=options["ttl"],
            description=options["description"],
        )
        self.stderr.write(f"Token for {name} (operator: {token.user.is_operator}), "
                          f"expires {token.expires_at:%Y-%m-%dT%H:%M:%SZ}:")
        self.stdout.write(raw)
