from store.files import INSTANCES
from store.management.exporting import ExportCommand


class Command(ExportCommand):
    transfer = INSTANCES
    help = ("Write every service instance as JSON in the create request's shape, "
            '{"instances": [{systemName, serviceDefinitionName, version, expiresAt, metadata, '
            "interfaces}]}; import_instances reads it back.")
