"""Where a stored secret may go: repository URLs parsed once, the way git and curl read them,
and the rules for the hosts a credential or a token is sent to.

A URL is read by one parser (``parse``) that accepts only what git, curl and Python's
``urllib`` all read the same way; anything they could read differently is refused rather
than guessed at: ``https:///user:token@host/x.git`` (Python sees no host and no user, curl
sees both), two ``@`` in the authority, a backslash, a percent sign or a bracket that is not
an IPv6 address in the host, a ``file://`` URL naming a host (git reads it as a path). No
message of this module repeats the URL's user part.

A credential is sent only to the origin (scheme, host, port) it was given for, and only over
HTTPS unless ``CREDENTIALS_PLAIN_HTTP_HOSTS`` names the host. A work connection's API
address is one of its provider's own hosts, or a host of ``PROVIDER_ALLOWED_HOSTS``; it is
HTTPS (the same plain-HTTP setting aside), and every address its host resolves to is public
unless ``PROVIDER_ALLOWED_NETWORKS`` holds it (loopback, link-local and private ranges are
refused otherwise).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import unquote

from django.conf import settings

from workspaces.credentials import REDACTED

NETWORK_SCHEMES = ("https", "http", "ssh", "git")
SCHEMES = (*NETWORK_SCHEMES, "file")
DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# A host name as git, curl and urllib all read it: labels of letters, digits, "-" and "_".
HOST_NAME = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?:\.(?!-)[A-Za-z0-9_-]{1,63})*\.?$")
SCP_LIKE = re.compile(
    r"^(?P<user>[\w.-]+)@(?P<host>[\w.-]+):(?!//)(?P<path>.+)$"
)  # git@github.com:org/repo.git
USERINFO = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=%:-]*$")
# Each provider's own API hosts: an exact name, or ".suffix" for any host under it.
PROVIDER_HOSTS = {
    "jira": (".atlassian.net",),
    "clickup": ("api.clickup.com",),
    "monday": ("api.monday.com",),
}
# A connection with no API address calls its provider's public API (Jira has none: a site each).
DEFAULT_API_URLS = {"clickup": "https://api.clickup.com/api/v2", "monday": "https://api.monday.com/v2"}


class AddressRefused(ValueError):
    """A URL that is not taken; the message never repeats its user part."""


@dataclass(frozen=True)
class Address:
    """A repository URL as git will read it."""

    scheme: str  # "https", "http", "ssh", "git", "file"; "ssh" for git@host:path too
    host: str = ""  # lower case; an IPv6 address without its brackets
    port: int | None = None
    userinfo: str = ""  # as typed (percent-encoded), "" when none
    path: str = ""  # a local path for "file", the URL's path otherwise
    scp_like: bool = False

    @property
    def origin(self) -> str:
        """``scheme://host:port`` with the scheme's default port spelt out: what a credential
        is bound to. "" for a local path."""
        if self.scheme == "file":
            return ""
        port = self.port or DEFAULT_PORTS[self.scheme]
        return f"{self.scheme}://{_bracketed(self.host)}:{port}"

    @property
    def local(self) -> bool:
        return self.scheme == "file"

    @property
    def redacted_marker(self) -> bool:
        """Whether the user part is the ``***`` left where a stored credential was."""
        user, _, password = self.userinfo.partition(":")
        return REDACTED in (self.userinfo, password)

    def basic_credential(self, stored: str) -> str:
        """``user:password`` as curl sends it for ``stored`` (typed percent-encoded, sent decoded)."""
        user, colon, password = stored.partition(":")
        return f"{unquote(user)}{colon}{unquote(password)}"


def parse(url: str) -> Address:
    """The URL as git reads it, or AddressRefused for what the parsers could read differently."""
    if not isinstance(url, str) or not url:
        raise AddressRefused("Not a repository URL: it is empty.")
    if url.startswith("-"):
        raise AddressRefused("Not a repository URL: it starts with '-' (git would read an option).")
    if any(char.isspace() or not char.isprintable() for char in url) or "\\" in url:
        raise AddressRefused("Not a repository URL: it holds spaces, control characters or a backslash.")
    found = SCHEME.match(url)
    if found is None:
        return _without_scheme(url)
    scheme = found.group(1).lower()
    if scheme not in SCHEMES:
        raise AddressRefused(f"git transport {scheme!r} is not allowed; use one of {', '.join(SCHEMES)}.")
    rest = url[found.end() :]
    if "#" in rest or "?" in rest:
        raise AddressRefused("A repository URL has no query or fragment ('?', '#').")
    if scheme == "file":
        if not rest.startswith("/") or "%" in rest:
            raise AddressRefused(
                "A file:// URL names an absolute path and no host (file:///srv/repo.git), "
                "without percent signs."
            )
        return Address(scheme="file", path=rest)
    authority, slash, path = rest.partition("/")
    if not authority:
        raise AddressRefused(
            f"A {scheme}:// URL needs a host right after '//' (curl and Python read "
            f"'{scheme}:///…' differently)."
        )
    if not slash or not path:
        raise AddressRefused(f"A {scheme}:// URL needs a path after its host.")
    userinfo, at, hostport = authority.rpartition("@")
    if at and ("@" in userinfo or not USERINFO.match(userinfo)):
        raise AddressRefused("The user part of the URL holds characters git and Python read differently.")
    host, port = _host_and_port(hostport)
    if scheme == "git" and at:
        raise AddressRefused("git:// carries no credential; use https://.")
    return Address(scheme=scheme, host=host, port=port, userinfo=userinfo, path="/" + path)


def _without_scheme(url: str) -> Address:
    if "::" in url:
        raise AddressRefused("git remote helpers ('transport::address') are not allowed.")
    scp = SCP_LIKE.match(url)
    if scp:
        host, _ = _host_and_port(scp.group("host"))
        return Address(
            scheme="ssh", host=host, userinfo=scp.group("user"), path=scp.group("path"), scp_like=True
        )
    if url.startswith("/"):
        return Address(scheme="file", path=url)
    raise AddressRefused("Not a repository URL (use an absolute path for a local one).")


def _host_and_port(hostport: str) -> tuple[str, int | None]:
    if hostport.startswith("["):
        inside, bracket, after = hostport[1:].partition("]")
        try:
            address = ipaddress.IPv6Address(inside) if bracket else None
        except ValueError:
            address = None
        if address is None or (after and not after.startswith(":")):
            raise AddressRefused("The host in brackets is not an IPv6 address.")
        return str(address), _port(after[1:]) if after else None
    host, colon, port = hostport.partition(":")
    if not HOST_NAME.match(host):
        raise AddressRefused("The URL's host is not a host name or an IP address git and Python read alike.")
    return host.lower().rstrip("."), _port(port) if colon else None


def _port(text: str) -> int:
    if not text.isdigit() or not text.isascii() or not 0 < int(text) < 65536:
        raise AddressRefused("The URL's port is not a number from 1 to 65535.")
    return int(text)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def take_credential(url: str) -> tuple[str, str]:
    """``(the URL with *** where its secret was, the secret)``: the secret is ``user:password``
    of an HTTP(S) URL, or the password of an ssh:// one (an SSH user name is no secret).
    AddressRefused for a URL ``parse`` refuses."""
    address = parse(url)
    if address.scp_like or not address.userinfo or address.redacted_marker:
        return url, ""
    found = SCHEME.match(url)
    assert found is not None  # a user part is only read after a scheme
    authority, slash, path = url[found.end() :].partition("/")
    userinfo, _, hostport = authority.rpartition("@")
    if address.scheme in ("http", "https"):
        kept, secret = REDACTED, userinfo
    else:
        user, colon, secret = userinfo.partition(":")
        if not colon:
            return url, ""
        kept = f"{user}:{REDACTED}"
    return f"{found.group(0)}{kept}@{hostport}{slash}{path}", secret


def for_git(url: str) -> str:
    """The URL git is given: an HTTP(S) URL's user part removed (its secret travels in a
    header); other URLs as they are."""
    address = parse(url)
    if address.scheme not in ("http", "https") or not address.userinfo:
        return url
    found = SCHEME.match(url)
    assert found is not None
    return found.group(0) + url[found.end() :].split("@", 1)[1]


def url_prefix(address: Address) -> str:
    """``scheme://host[:port]/``: the URLs git sends a header scoped to this address to."""
    port = f":{address.port}" if address.port else ""
    return f"{address.scheme}://{_bracketed(address.host)}{port}/"


def loose_origin(url: str) -> str:
    """The origin of a URL that may not parse (a value stored before these rules): "" then."""
    try:
        return parse(url).origin
    except AddressRefused:
        return ""


def shown(url: str) -> str:
    """The URL for a message: its user part replaced by ``***``, whatever the parsers make of it."""
    found = SCHEME.match(url)
    if found is None:
        return url if "@" not in url else REDACTED + url[url.rindex("@") :]
    rest = url[found.end() :]
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = f"{REDACTED}@{authority.rpartition('@')[2]}"
    if "@" in path:  # "https:///user:token@host": curl's authority, Python's path
        path = path.rsplit("@", 1)[1]
        return f"{found.group(0)}{authority}{slash}{REDACTED}@{path}"
    return f"{found.group(0)}{authority}{slash}{path}"


# --- Credentials over the network ----------------------------------------------------------


def plain_http_allowed(host: str) -> bool:
    return _listed(host, settings.CREDENTIALS_PLAIN_HTTP_HOSTS)


def check_credential_transport(scheme: str, host: str) -> None:
    """A credential goes over HTTPS only, or plain HTTP to a host the setting names."""
    if scheme == "https" or (scheme == "http" and plain_http_allowed(host)):
        return
    raise AddressRefused(
        f"A credential is sent over HTTPS only; {scheme}://{_bracketed(host)} is not HTTPS "
        "(CREDENTIALS_PLAIN_HTTP_HOSTS names the hosts that may take one over plain HTTP)."
    )


def _listed(host: str, entries: list[str]) -> bool:
    """Whether ``host`` is one of ``entries``: exact names, or ".suffix" for hosts under one."""
    host = host.lower().rstrip(".")
    for entry in entries:
        entry = entry.lower().strip().rstrip(".").removeprefix("*")
        if not entry:
            continue
        if host == entry or (entry.startswith(".") and host.endswith(entry)):
            return True
    return False


# --- Work connections' API addresses ---------------------------------------------------------


@dataclass(frozen=True)
class ApiAddress:
    url: str  # without a trailing "/"
    scheme: str
    host: str
    port: int

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{_bracketed(self.host)}:{self.port}"


def api_address(kind: str, url: str) -> ApiAddress:
    """A connection's API address checked against its provider's hosts and the allow-list
    (without resolving it: ``check_resolved`` does that before each sync)."""
    url = url.strip().rstrip("/")
    found = SCHEME.match(url)
    if found is None or found.group(1).lower() not in ("https", "http"):
        raise AddressRefused("The API address must be an https:// URL.")
    scheme = found.group(1).lower()
    rest = url[found.end() :]
    if any(char.isspace() or not char.isprintable() for char in url) or any(c in rest for c in "\\?#@%"):
        raise AddressRefused(
            "The API address holds a user part, a query, a fragment, a percent sign or a backslash."
        )
    authority, _, path = rest.partition("/")
    if not authority:
        raise AddressRefused("The API address has no host.")
    host, port = _host_and_port(authority)
    if any(part in (".", "..") for part in path.split("/")):
        raise AddressRefused("The API address's path holds '.' or '..'.")
    own = PROVIDER_HOSTS.get(kind, ())
    if not (_listed(host, list(own)) or _listed(host, settings.PROVIDER_ALLOWED_HOSTS)):
        raise AddressRefused(
            f"The API address's host {host} is not one of the provider's own ({', '.join(own) or 'none'}) "
            "nor in PROVIDER_ALLOWED_HOSTS."
        )
    if scheme != "https" and not plain_http_allowed(host):
        raise AddressRefused(
            "The API address must be https:// (CREDENTIALS_PLAIN_HTTP_HOSTS names the hosts that may "
            "take a token over plain HTTP)."
        )
    literal = _ip(host)
    if literal is not None:
        _check_public(host, [literal])
    return ApiAddress(url=url, scheme=scheme, host=host, port=port or DEFAULT_PORTS[scheme])


def api_origin(kind: str, url: str) -> str:
    """The origin a connection's token is bound to: its API address's (or its provider's
    public API's), whether or not the address passes ``api_address``; "" if it has none."""
    url = (url or DEFAULT_API_URLS.get(kind, "")).strip()
    found = SCHEME.match(url)
    if found is None or found.group(1).lower() not in DEFAULT_PORTS:
        return ""
    scheme = found.group(1).lower()
    try:
        host, port = _host_and_port(url[found.end() :].split("/", 1)[0].rpartition("@")[2])
    except AddressRefused:
        return ""
    return f"{scheme}://{_bracketed(host)}:{port or DEFAULT_PORTS[scheme]}"


def check_resolved(address: ApiAddress) -> None:
    """Every address the host resolves to is public, or in PROVIDER_ALLOWED_NETWORKS.
    OSError when the name does not resolve (the caller decides what that means)."""
    infos = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)
    found = {ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos}
    _check_public(address.host, sorted(found, key=str))


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _check_public(host: str, found: list[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> None:
    networks = [
        ipaddress.ip_network(str(entry), strict=False) for entry in settings.PROVIDER_ALLOWED_NETWORKS
    ]
    for address in found:
        mapped = getattr(address, "ipv4_mapped", None) or address
        if mapped.is_global and not mapped.is_multicast:
            continue
        if any(mapped.version == net.version and mapped in net for net in networks):
            continue
        raise AddressRefused(
            f"The API address's host {host} is at {address}, a loopback, link-local, private or "
            "reserved address (PROVIDER_ALLOWED_NETWORKS lists the ranges allowed)."
        )
