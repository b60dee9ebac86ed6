from django.core.management.base import CommandError, CommandParser

from conventions import names
from conventions.exceptions import InvalidParameter
from store.files import RULES
from store.management.importing import ImportCommand


class Command(ImportCommand):
    transfer = RULES
    help = ("Import orchestration rules from a JSON file in the API's create shape "
            '({"entries": [{consumer, serviceInstanceId, priority}]}; export_rules output works '
            "too). A rule whose consumer, service definition and priority are stored with the "
            "same instance is unchanged; with another instance it is refused unless --update. "
            "Everything is validated first, then written in one transaction: all or nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--as", dest="requester", default="Sysop",
                            help="system name recorded as createdBy/updatedBy (default Sysop)")

    def handle(self, *args, **options) -> None:
        try:
            options["requester"] = names.system_name(options["requester"])
        except InvalidParameter as exc:
            raise CommandError(f"--as: {exc.message}") from exc
        super().handle(*args, **options)
