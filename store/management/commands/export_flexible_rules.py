"""`manage.py export_flexible_rules [FILE]`: every flexible rule in the create shape."""
import json

from django.core.management.base import BaseCommand, CommandParser

from store.models import FlexibleRule

_FIELDS = (("consumer", "consumer"), ("consumerMetadataRequirements", "consumer_metadata"),
           ("provider", "provider"), ("providerMetadataRequirements", "provider_metadata"),
           ("serviceDefinition", "service_definition"),
           ("interfaceTemplateName", "interface_template"),
           ("serviceMetadataRequirements", "service_metadata"), ("minVersion", "min_version"),
           ("maxVersion", "max_version"), ("priority", "priority"))


class Command(BaseCommand):
    help = ('Write every flexible store rule as JSON in the create shape, {"entries": [...]} '
            "(to FILE, or standard output); import_flexible_rules reads it back.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?")

    def handle(self, *args, **options) -> None:
        entries = [{wire: getattr(rule, attribute) for wire, attribute in _FIELDS
                    if getattr(rule, attribute) is not None}
                   for rule in FlexibleRule.objects.order_by("created_at", "id")]
        text = json.dumps({"entries": entries}, indent=1, ensure_ascii=False) + "\n"
        if options["file"]:
            with open(options["file"], "w", encoding="utf-8") as target:
                target.write(text)
            self.stderr.write(f"Exported {len(entries)} flexible rule(s) to {options['file']}")
        else:
            self.stdout.write(text, ending="")
