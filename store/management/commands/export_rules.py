from store.files import rules_export
from store.management.exporting import ExportCommand


class Command(ExportCommand):
    noun = "rule"
    help = ("Write every orchestration rule as JSON in the API's shape, "
            '{"entries": [{id, consumer, serviceInstanceId, priority, ...}], "count": N}; '
            "import_rules reads it back.")
    export = staticmethod(rules_export)
