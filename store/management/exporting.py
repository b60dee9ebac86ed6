"""What export_rules and export_instances share; the documents are store.files'."""
import os

from django.core.management.base import BaseCommand, CommandParser

from store.files import Transfer


class ExportCommand(BaseCommand):
    transfer: Transfer

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, **options) -> None:
        export = self.transfer.export()
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
        self.stderr.write(f"Exported {export.count} {self.transfer.noun}(s).")
