#!/usr/bin/env python
"""Django's command-line utility for the job platform."""

import gc
import os
import sys


def main() -> None:
    gc.disable()  # until Django is set up (config/startup.py)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config import startup

    startup.collect_after_setup()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
