from django.core.management.base import CommandError, CommandParser

from conventions import names
from conventions.exceptions import InvalidParameter
from store.files import rules_read
from store.management.importing import ImportCommand
from store.services.imports import rule_import, rule_import_plan


class Command(ImportCommand):
    noun = "rule"
    help = ("Import orchestration rules from a JSON file in the API's create shape "
            '({"entries": [{consumer, serviceInstanceId, priority}]}; export_rules output works '
            "too). A rule whose consumer, service definition and priority are stored with the "
            "same instance is unchanged; with another instance it is refused unless --update. "
            "Everything is validated first, then written in one transaction: all or nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--as", dest="requester", default="Sysop",
                            help="system name recorded as createdBy/updatedBy (default Sysop)")

    def read(self, content: bytes, source: str, options: dict) -> list:
        try:
            options["requester"] = names.system_name(options["requester"])
        except InvalidParameter as exc:
            raise CommandError(f"--as: {exc.message}") from exc
        return rules_read(content, source=source)

    def plan(self, entries, *, replace: bool):
        return rule_import_plan(entries, replace=replace)

    def apply(self, entries, options: dict, **kwargs):
        return rule_import(entries, requester=options["requester"], **kwargs)
