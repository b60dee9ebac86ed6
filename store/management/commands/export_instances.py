from store.files import instances_export
from store.management.exporting import ExportCommand


class Command(ExportCommand):
    noun = "instance"
    help = ("Write every service instance as JSON in the create request's shape, "
            '{"instances": [{systemName, serviceDefinitionName, version, expiresAt, metadata, '
            "interfaces}]}; import_instances reads it back.")
    export = staticmethod(instances_export)
