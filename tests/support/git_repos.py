"""Real git repositories for the tests: a bare "origin" and a work tree that pushes to it,
and a smart-HTTP git server behind Basic authentication (``git http-backend``)."""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
from pathlib import Path

from werkzeug import Request, Response

# The tests' own git runs must not see the machine's config either.
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(*args: str | Path, cwd: Path | None = None, input: bytes | None = None) -> str:
    result = subprocess.run(
        ["git", *map(str, args)], cwd=cwd, env=GIT_ENV, input=input, capture_output=True, check=True
    )
    return result.stdout.decode().strip()


class Origin:
    """A bare repository (what a URL points at) and a work tree that commits and pushes to it."""

    def __init__(self, base: Path, *, branch: str = "main") -> None:
        self.bare = base / "origin.git"
        self.work = base / "work"
        self.branch = branch
        git("init", "--quiet", "--bare", f"--initial-branch={branch}", self.bare)
        git("init", "--quiet", f"--initial-branch={branch}", self.work)
        git("remote", "add", "origin", self.bare, cwd=self.work)

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def commit(self, files: dict[str, str | bytes | None], message: str = "change") -> str:
        """Write (or, for None, delete) files, commit and push; returns the new commit."""
        for name, content in files.items():
            path = self.work / name
            if content is None:
                git("rm", "--quiet", name, cwd=self.work)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        return self._commit(message)

    def link(self, name: str, target: str) -> str:
        """Commit a symbolic link ``name`` → ``target``."""
        (self.work / name).symlink_to(target)
        return self._commit(f"link {name}")

    def branch_off(self, branch: str, files: dict[str, str]) -> None:
        """Push another branch with its own files; the default branch stays as it was."""
        git("checkout", "--quiet", "-b", branch, cwd=self.work)
        self.commit(files, f"work on {branch}")
        git("push", "--quiet", "origin", branch, cwd=self.work)
        git("checkout", "--quiet", self.branch, cwd=self.work)

    def many_files(self, count: int) -> str:
        """One commit of ``count`` small files, written by fast-import (seconds, not minutes)."""
        lines = [b"blob", b"mark :1", b"data 12", b"print('ok')\n"]
        lines += [
            f"commit refs/heads/{self.branch}".encode(),
            b"committer Ada <ada@example.com> 1700000000 +0000",
            b"data 5",
            b"many\n",
        ]
        lines += [f"M 100644 :1 pkg{i // 1000:03d}/module_{i:05d}.py".encode() for i in range(count)]
        git("fast-import", "--quiet", cwd=self.bare, input=b"\n".join(lines) + b"\n")
        return git("rev-parse", self.branch, cwd=self.bare)

    def _commit(self, message: str) -> str:
        git("add", "--all", cwd=self.work)
        git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        git("push", "--quiet", "origin", self.branch, cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)


def http_backend(project_root: Path, credential: str, seen: list[dict[str, str]]):
    """A werkzeug handler serving the repositories under ``project_root`` over git's smart
    HTTP protocol, for clients sending Basic ``credential``; records each request's headers."""
    expected = "Basic " + base64.b64encode(credential.encode()).decode()

    def handle(request: Request) -> Response:
        seen.append(dict(request.headers))
        if request.headers.get("Authorization") != expected:
            return Response("", status=401, headers={"WWW-Authenticate": 'Basic realm="git"'})
        body = request.get_data()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        env = {
            **GIT_ENV,
            "GIT_PROJECT_ROOT": str(project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": request.path,
            "QUERY_STRING": request.query_string.decode(),
            "REQUEST_METHOD": request.method,
            "CONTENT_TYPE": request.content_type or "",
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": credential.split(":", 1)[0],
            "GIT_PROTOCOL": request.headers.get("Git-Protocol", ""),
        }
        output = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = output.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value
        return Response(payload, status=status, headers=headers)

    return handle


def tree_bomb(origin: Origin, *, fan_out: int, depth: int, files: bool = True) -> str:
    """Commit, on the origin's branch, a tree of ``depth`` levels of ``fan_out`` folders that
    all name the same tree below: a few objects that list (and would check out) as
    ``fan_out ** depth`` leaves. Its leaves are empty files, or with ``files=False`` empty
    folders (nothing to check out, and nothing that weighs)."""
    bare = origin.bare
    if files:
        blob = git("hash-object", "-w", "-t", "blob", "--stdin", cwd=bare, input=b"")
        listing = "".join(f"100644 blob {blob}\tf{i}\n" for i in range(fan_out))
    else:
        empty = git("mktree", cwd=bare, input=b"")
        listing = "".join(f"040000 tree {empty}\te{i}\n" for i in range(fan_out))
    tree = git("mktree", cwd=bare, input=listing.encode())
    for _ in range(depth - 1):
        listing = "".join(f"040000 tree {tree}\td{i}\n" for i in range(fan_out))
        tree = git("mktree", cwd=bare, input=listing.encode())
    commit = git("commit-tree", "-m", "bomb", tree, cwd=bare)
    git("update-ref", f"refs/heads/{origin.branch}", commit, cwd=bare)
    return commit


def ref_flood(refs: int) -> bytes:
    """A gzipped smart-HTTP ref advertisement (protocol v0) of ``refs`` tags: a small answer
    that inflates to many megabytes and lists refs by the hundred thousand."""

    def line(text: str) -> bytes:
        data = text.encode()
        return b"%04x" % (len(data) + 4) + data

    commit = "1" * 40
    parts = [
        line("# service=git-upload-pack\n"),
        b"0000",
        line(f"{commit} HEAD\0side-band-64k ofs-delta shallow symref=HEAD:refs/heads/main\n"),
        line(f"{commit} refs/heads/main\n"),
        *(line(f"{commit} refs/tags/v{i:09d}\n") for i in range(refs)),
        b"0000",
    ]
    return gzip.compress(b"".join(parts))
