"""The fresh project's tasks: plain django.tasks code, nothing of the engine's."""

from django.tasks import task


@task
def greet(name: str) -> str:
    return f"Hello, {name}!"


@task(priority=5)
async def shout(name: str) -> str:
    return name.upper()


@task
def fail() -> None:
    raise LookupError("nothing here")
