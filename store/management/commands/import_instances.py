from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import OperationalError, transaction
from django.utils import timezone

from config.exceptions import ArrowheadError, InvalidParameter
from store.management.files import read_validated
from store.management.progress import progress_bar
from store.models import ServiceInstance
from store.serializers.instances import InstanceCreateSerializer, instance_drafts_from
from store.services.instances import (
    instance_delete_many,
    instance_validate,
    instances_store,
)


class Command(BaseCommand):
    help = ("Import service instances from a JSON file in the create request's shape "
            '({"instances": [...]}; export_instances output works too). Everything is '
            "validated first, then written in one transaction; an existing id is replaced.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--replace", action="store_true",
                            help="remove every existing instance first (same transaction)")

    def handle(self, *args, **options) -> None:
        instances = self._validated(self._read(options["file"]))
        total = len(instances)
        try:
            with transaction.atomic():
                if options["replace"]:
                    removed = instance_delete_many(instance_ids=ServiceInstance.objects.values_list(
                        "service_instance_id", flat=True))
                    self.stderr.write(f"Removed {removed} existing instance(s).")
                instances_store(instances, progress=progress_bar(self.stderr, "Importing instances", total))
        except (ArrowheadError, OperationalError) as exc:  # e.g. a concurrent writer
            raise CommandError(getattr(exc, "message", f"Nothing imported: {exc}")) from exc
        self.stderr.write(f"\nImported {total} instance(s).")

    def _read(self, path: str) -> list:
        return instance_drafts_from(read_validated(path, InstanceCreateSerializer))

    def _validated(self, drafts: list) -> list:
        now, seen, instances = timezone.now(), set(), []
        for index, draft in enumerate(drafts):
            if draft is None:
                raise CommandError(f"instances[{index}]: null entry")
            try:
                instance = instance_validate(draft, now=now)
            except InvalidParameter as exc:
                raise CommandError(f"instances[{index}]: {exc.message}") from exc
            if instance.instance_id in seen:
                raise CommandError(f"instances[{index}]: Duplicated instance: "
                                   f"{instance.instance_id}")
            seen.add(instance.instance_id)
            instances.append(instance)
        return instances
