from store.files import INSTANCES
from store.management.importing import ImportCommand


class Command(ImportCommand):
    transfer = INSTANCES
    help = ("Import service instances from a JSON file in the create request's shape "
            '({"instances": [...]}; export_instances output works too). An instance stored '
            "with the same id and content is unchanged; one that differs is refused unless "
            "--update. Everything is validated first, then written in one transaction.")
