"""``manage.py import_mail PATH...``: import .eml files, mbox files and Maildir folders."""

from django.core.management.base import BaseCommand

from pipeline.sources import import_paths


class Command(BaseCommand):
    help = "Import emails (.eml files, mbox files, Maildir folders) and queue their processing."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")

    def handle(self, *args, **options) -> None:
        counts = import_paths(options["paths"])
        for problem in counts.problems:
            self.stderr.write(f"unreadable: {problem}")
        for problem in counts.oversized:
            self.stderr.write(f"too large: {problem}")
        self.stdout.write(
            f"{counts.imported} imported, {counts.already_present} already present, "
            f"{counts.unreadable} unreadable, {counts.too_large} too large"
        )
