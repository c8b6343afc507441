"""``manage.py rotate_credentials``: re-encrypt the stored credentials under the first key of
CREDENTIALS_KEYS (see workspaces/services/rotation.py)."""

from django.core.management.base import BaseCommand

from workspaces.services.rotation import reencrypt_stored_credentials


class Command(BaseCommand):
    help = "Re-encrypt every stored credential (repositories, work connections) under the first CREDENTIALS_KEYS key."

    def handle(self, *args, **options) -> None:
        result = reencrypt_stored_credentials()
        self.stdout.write(f"{result.rotated} credentials re-encrypted, {result.unreadable} no key decrypts.")
        if result.unreadable:
            self.stderr.write(
                "Enter those again on their admin pages: no key of CREDENTIALS_KEYS opens them."
            )
