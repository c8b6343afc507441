"""Links that other apps put on the Background jobs page.

The engine knows no domain queue or page. An app that wants a shortcut on the page (its
queue's failed jobs, say) registers it from its own ``admin.py``::

    import jobs

    jobs.register_admin_link("mail-failed", "Failed jobs of the mail queue", status="failed", queue="mail")

A link is a view of the page itself with its filters set (``status``, ``queue``, ``type``,
or a search ``q``), or any other admin page given by its URL name.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

#: What a link may set on the page: its list filters and its search.
PAGE_PARAMETERS = frozenset({"status", "queue", "type", "q"})


@dataclass(frozen=True)
class PageLink:
    key: str
    label: str
    filters: tuple[tuple[str, str], ...] = ()
    url_name: str = ""

    @property
    def element_id(self) -> str:
        return f"job-{self.key}"

    def url(self) -> str:
        if self.url_name:
            return reverse(self.url_name)
        return f"{reverse('admin:platform_job_changelist')}?{urlencode(self.filters)}"


_links: dict[str, PageLink] = {}


def register_link(key: str, label: str, *, url_name: str = "", **filters: str) -> PageLink:
    """Show ``label`` in the page's tools, linking to the page filtered by ``filters``, or
    to the admin URL named ``url_name``. ``key`` names the link (its element id is
    ``job-<key>``); registering the same link twice is harmless, another under a taken key
    is an error."""
    unknown = set(filters) - PAGE_PARAMETERS
    if unknown:
        raise ImproperlyConfigured(
            f"Link {key!r}: the Background jobs page has no filter {', '.join(sorted(unknown))}."
        )
    if bool(url_name) == bool(filters):
        raise ImproperlyConfigured(f"Link {key!r}: give either filters of the page or a url_name.")
    link = PageLink(key, label, tuple(filters.items()), url_name)
    if _links.get(key, link) != link:
        raise ImproperlyConfigured(f"Another link is already registered as {key!r}.")
    _links[key] = link
    return link


def registered_links() -> list[PageLink]:
    """The links in the order they were registered (the apps' order in INSTALLED_APPS)."""
    return list(_links.values())


def unregister_link(key: str) -> None:
    """Take a link off the page again (an app's tests, say)."""
    _links.pop(key, None)
