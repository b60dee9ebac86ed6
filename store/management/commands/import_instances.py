from django.utils import timezone

from store.files import instances_read
from store.management.importing import ImportCommand
from store.services.imports import instance_import, instance_import_plan


class Command(ImportCommand):
    noun = "instance"
    help = ("Import service instances from a JSON file in the create request's shape "
            '({"instances": [...]}; export_instances output works too). An instance stored '
            "with the same id and content is unchanged; one that differs is refused unless "
            "--update. Everything is validated first, then written in one transaction.")

    def read(self, content: bytes, source: str, options: dict) -> list:
        return instances_read(content, source=source, now=timezone.now())

    def plan(self, entries, *, replace: bool):
        return instance_import_plan(entries, replace=replace)

    def apply(self, entries, options: dict, **kwargs):
        return instance_import(entries, **kwargs)
