from store.files import RULES
from store.management.exporting import ExportCommand


class Command(ExportCommand):
    transfer = RULES
    help = ("Write every orchestration rule as JSON in the API's shape, "
            '{"entries": [{id, consumer, serviceInstanceId, priority, ...}], "count": N}; '
            "import_rules reads it back.")
