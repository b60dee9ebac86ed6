from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import OperationalError, transaction

from config.conventions import names
from config.exceptions import ArrowheadError, InvalidParameter
from store.management.files import read_validated
from store.management.progress import progress_bar
from store.serializers.rules import RuleCreateSerializer, rule_drafts_from
from store.services.rules import (
    RuleDraft,
    ValidRule,
    rule_delete_all,
    rule_validate,
    rules_ensure_distinct,
    rules_store,
)


class Command(BaseCommand):
    help = ("Import orchestration rules from a JSON file in the API's create shape "
            '({"entries": [{consumer, serviceInstanceId, priority}]}; export_rules output works '
            "too). Everything is validated first, then written in one transaction: all or "
            "nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--replace", action="store_true",
                            help="remove every existing rule first (in the same transaction)")
        parser.add_argument("--as", dest="requester", default="Sysop",
                            help="system name recorded as createdBy/updatedBy (default Sysop)")

    def handle(self, *args, **options) -> None:
        requester = self._requester(options["requester"])
        rules = self._validated(self._read(options["file"]))
        total = len(rules)
        try:
            with transaction.atomic():
                if options["replace"]:
                    removed = rule_delete_all()
                    self.stderr.write(f"Removed {removed} existing rule(s).")
                rules_store(rules, requester=requester, progress=progress_bar(self.stderr, "Importing rules", total))
        except (ArrowheadError, OperationalError) as exc:  # refused, or a concurrent writer
            raise CommandError(getattr(exc, "message", f"Nothing imported: {exc}")) from exc
        self.stderr.write(f"\nImported {total} rule(s).")

    def _requester(self, value: str) -> str:
        try:
            return names.system_name(value)
        except InvalidParameter as exc:
            raise CommandError(f"--as: {exc.message}") from exc

    def _read(self, path: str) -> list:
        return rule_drafts_from(read_validated(path, RuleCreateSerializer))

    def _validated(self, drafts: list[RuleDraft | None]) -> list[ValidRule]:
        rules = []
        for index, draft in enumerate(drafts):
            if draft is None:
                raise CommandError(f"entries[{index}]: null entry")
            try:
                rules.append(rule_validate(draft))
            except InvalidParameter as exc:
                raise CommandError(f"entries[{index}]: {exc.message}") from exc
        try:
            rules_ensure_distinct(rules)
        except InvalidParameter as exc:
            raise CommandError(exc.message) from exc
        return rules
