import json
import sys

from django.core.management.base import BaseCommand, CommandParser

from store.models import ServiceInstance
from store.serializers.instances import instance_create_shape


class Command(BaseCommand):
    help = ("Write every service instance as JSON in the create request's shape, "
            '{"instances": [{systemName, serviceDefinitionName, version, expiresAt, metadata, '
            "interfaces}]}; import_instances reads it back.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, **options) -> None:
        out = open(options["output"], "w", encoding="utf-8") if options["output"] else sys.stdout
        count = 0
        instances = (ServiceInstance.objects.order_by("service_instance_id")
                     .prefetch_related("interfaces"))
        try:
            out.write('{"instances": [')
            for instance in instances.iterator(chunk_size=500):
                out.write(("," if count else "") + "\n  "
                          + json.dumps(instance_create_shape(instance)))
                count += 1
            out.write("\n]}\n")
        finally:
            if out is not sys.stdout:
                out.close()
        self.stderr.write(f"Exported {count} instance(s).")
