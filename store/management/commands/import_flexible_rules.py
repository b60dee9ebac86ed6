"""`manage.py import_flexible_rules FILE`: flexible rules from this service's export or from
Arrowhead 4.6 (docs/flexible-store.md "Import and export")."""
import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from api.input_safety import json_problem
from conventions import names
from conventions.exceptions import InvalidParameter
from store.file_entries import entries_typed, one_line
from store.serializers.flexible_rules import (
    FlexibleRuleCreateSerializer,
    flexible_rule_drafts_from,
)
from store.services.flexible_imports import (
    arrowhead_46_draft,
    arrowhead_46_entries,
    flexible_imports_plan,
)
from store.services.flexible_rules import flexible_rules_store


def _describe(rule) -> str:
    consumer = rule.consumer or f"consumers {json.dumps(rule.consumer_metadata)}"
    provider = rule.provider or f"providers {json.dumps(rule.provider_metadata)}"
    parts = [f"{consumer} -> {rule.service_definition} of {provider}"]
    if rule.interface_template:
        parts.append(f"via {rule.interface_template}")
    if rule.service_metadata:
        parts.append(f"instances {json.dumps(rule.service_metadata)}")
    return " ".join(parts) + f", priority {rule.priority}"


class Command(BaseCommand):
    help = ("Import flexible store rules from a JSON file: this service's create body or "
            'export_flexible_rules output ({"entries": [...]}), or with --arrowhead-4.6 '
            "Arrowhead 4.6 flexible store rules (a list of OrchestratorStoreFlexibleRequestDTO, "
            'or its list response with them in "data"), translated. Rules stored already are '
            "skipped; the others are created in one transaction. Every rule that cannot be "
            "imported is listed on stderr (#n: why), and then nothing is written unless "
            "--skip-refused. --dry-run lists what would be created and what cannot be "
            "imported, writing nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--arrowhead-4.6", dest="arrowhead_46", action="store_true",
                            help="the file holds Arrowhead 4.6 flexible store rules")
        parser.add_argument("--dry-run", action="store_true",
                            help="list what would be created and refused; write nothing")
        parser.add_argument("--skip-refused", action="store_true",
                            help="create the others when some rules cannot be imported "
                                 "(without it such an import writes nothing)")
        parser.add_argument("--as", dest="requester", default="Sysop",
                            help="system name recorded as createdBy (default Sysop)")

    def handle(self, *args, **options) -> None:
        try:
            requester = names.system_name(options["requester"])
        except InvalidParameter as exc:
            raise CommandError(f"--as: {exc.message}") from exc
        try:
            with open(options["file"], encoding="utf-8") as source:
                data = json.load(source)
        except (OSError, ValueError) as exc:
            raise CommandError(f"{options['file']}: {exc}") from exc
        try:
            drafts = self._drafts(data, arrowhead_46=options["arrowhead_46"])
        except InvalidParameter as exc:
            raise CommandError(f"{options['file']}: {exc.message}") from exc
        plan = flexible_imports_plan(drafts)
        if options["dry_run"]:
            self._print_plan(plan, "Would create")
            self.stdout.write("Dry run: nothing written.")
            return
        for number, reason in plan.refused:  # every one, one a line
            self.stderr.write(f"#{number}: {one_line(reason)}")
        if plan.refused and not options["skip_refused"]:
            raise CommandError(f"{len(plan.refused)} rule(s) cannot be imported; nothing "
                               "written (--skip-refused creates the others)")
        self._print_plan(plan, "Creating")
        try:
            flexible_rules_store([rule for _, rule in plan.created], requester=requester)
        except InvalidParameter as exc:  # a rule created meanwhile by someone else
            raise CommandError(f"{exc.message}; nothing written") from exc
        self.stdout.write(f"Created {len(plan.created)} rule(s).")

    def _print_plan(self, plan, verb: str) -> None:
        """What is created and skipped; in a dry run also what cannot be imported."""
        self.stdout.write(f"{verb} {len(plan.created)} rule(s):")
        for number, rule in plan.created:
            self.stdout.write(f"  #{number}: {_describe(rule)}")
        if plan.stored:
            self.stdout.write(f"Stored already, skipped: {len(plan.stored)} rule(s): "
                              + ", ".join(f"#{n}" for n, _ in plan.stored))
        if plan.refused and verb == "Would create":
            self.stdout.write(f"Cannot import {len(plan.refused)} rule(s):")
            for number, reason in plan.refused:
                self.stdout.write(f"  #{number}: {reason}")

    def _drafts(self, data, *, arrowhead_46: bool) -> list:
        """One draft per entry of the file, or the InvalidParameter it is refused with (its
        message relative to the entry: `priority: A valid integer is required.`)."""
        if arrowhead_46:
            drafts = []
            entries = arrowhead_46_entries(data)
            if isinstance(data, dict):  # a list response: the rest of it (`count`)
                problem = json_problem({k: v for k, v in data.items() if k != "data"})
                if problem is not None:
                    raise InvalidParameter(problem)
            for entry in entries:
                try:
                    problem = json_problem(entry)  # what the API's input gate refuses
                    if problem is not None:
                        raise InvalidParameter(problem)
                    drafts.append(arrowhead_46_draft(entry))
                except InvalidParameter as exc:
                    drafts.append(exc)
            return drafts
        if not isinstance(data, dict):
            raise InvalidParameter('The file holds no flexible rules in the create shape '
                                   '({"entries": [...]})')
        validated, problems = entries_typed(data, FlexibleRuleCreateSerializer, key="entries",
                                            path_of=lambda index: "")
        return [InvalidParameter(problems[index]) if index in problems
                else draft if draft is not None else InvalidParameter("null entry")
                for index, draft in enumerate(flexible_rule_drafts_from(validated))]
