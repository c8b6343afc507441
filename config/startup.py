"""A command's start-up without the cyclic garbage collector.

Setting Django up (its modules, the project's, the models, the registries) creates some
hundreds of thousands of objects that live as long as the process, and next to no garbage;
the collector would still walk them a dozen times while they are made: about a seventh of a
worker's start-up CPU (docs/benchmarks.md, start-up). ``manage.py`` pauses it from its
first line, and ``collect_after_setup`` has ``django.setup()`` end by freezing what start-up
built (``gc.freeze``: later collections, the children's too, skip those objects, which
also keeps a forked child from writing to the pages it shares with its parent) and turning
the collector back on.
"""

from __future__ import annotations

import functools
import gc

import django


def collect_after_setup() -> None:
    """Make ``django.setup()`` freeze what start-up built and turn the collector on
    (``manage.py`` turned it off before importing Django)."""
    setup = django.setup

    @functools.wraps(setup)
    def setup_then_collect(set_prefix: bool = True) -> None:
        try:
            setup(set_prefix)
        finally:
            gc.freeze()
            gc.enable()

    django.setup = setup_then_collect
