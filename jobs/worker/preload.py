"""Imported once by the forkserver, so every child starts with Django already set up."""

import django

django.setup()
