"""Settings for the test suite: PostgreSQL and the test-only job types."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jobplatform")

from config.settings import *  # noqa: E402,F403
from config.settings import INSTALLED_APPS  # noqa: E402

INSTALLED_APPS = [*INSTALLED_APPS, "tests.jobs_app"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
