"""What export_rules and export_instances share; the documents are store.files'."""
import os

from django.core.management.base import BaseCommand, CommandParser

from store.files import Export


class ExportCommand(BaseCommand):
    noun: str  # "rule", "instance"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def export(self) -> Export:
        raise NotImplementedError

    def handle(self, *args, **options) -> None:
        export = self.export()
        if options["output"]:
            # Written aside and renamed when complete: a failed export leaves no half file.
            partial = f"{options['output']}.partial"
            try:
                with open(partial, "w", encoding="utf-8") as out:
                    out.writelines(export)
                os.replace(partial, options["output"])
            finally:
                if os.path.exists(partial):
                    os.remove(partial)
        else:
            for chunk in export:
                self.stdout.write(chunk, ending="")
        self.stderr.write(f"Exported {export.count} {self.noun}(s).")
