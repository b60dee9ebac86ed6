import json
import sys

from django.core.management.base import BaseCommand, CommandParser

from store.selectors.rules import rule_export
from store.serializers.rules import RuleSerializer


class Command(BaseCommand):
    help = ("Write every orchestration rule as JSON in the API's shape, "
            '{"entries": [{id, consumer, serviceInstanceId, priority, ...}], "count": N}; '
            "import_rules reads it back.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, **options) -> None:
        out = open(options["output"], "w", encoding="utf-8") if options["output"] else sys.stdout
        count = 0
        try:
            out.write('{"entries": [')
            for rule in rule_export().iterator(chunk_size=2000):
                out.write(("," if count else "") + "\n  " + json.dumps(RuleSerializer(rule).data))
                count += 1
            out.write(f'\n], "count": {count}}}\n')
        finally:
            if out is not sys.stdout:
                out.close()
        self.stderr.write(f"Exported {count} rule(s).")
