"""factory-boy factories for the workspace domain, with traits per state."""

from __future__ import annotations

from datetime import timedelta

import factory
from django.utils import timezone

from workspaces import models


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Organization

    name = factory.Sequence(lambda n: f"Org {n}")
    billing_email = factory.Sequence(lambda n: f"billing{n}@example.com")
    plan = models.Organization.Plan.TRIAL
    trial_ends_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=14))

    class Params:
        ending_soon = factory.Trait(
            trial_ends_at=factory.LazyFunction(lambda: timezone.now() + timedelta(days=2))
        )
        paid = factory.Trait(plan=models.Organization.Plan.PAID)


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Workspace

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"Workspace {n}")


class RepositoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Repository

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"repo-{n}")
    metadata = factory.LazyFunction(
        lambda: {
            "files": {
                "manage.py": "import django\n",
                "app/models.py": "class Thing:\n    pass  # TODO: fields\n",
                "app/views.py": "def index(request):\n    return None\n",
                "tests/test_app.py": "def test_ok():\n    assert True\n",
                "README.md": "# Demo\n",
            }
        }
    )

    class Params:
        ingested = factory.Trait(
            status=models.Repository.Status.INGESTED,
            kind="django-project",
            primary_language="Python",
            paths=["README.md", "app/models.py", "app/views.py", "manage.py", "tests/test_app.py"],
            languages={"Python": 4},
            file_count=5,
            ingested_at=factory.LazyFunction(timezone.now),
        )


class PullRequestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.PullRequest

    repository = factory.SubFactory(RepositoryFactory)
    number = factory.Sequence(lambda n: n + 1)
    title = factory.Sequence(lambda n: f"Change {n}")
    author = "ada"
    changed_files = factory.LazyFunction(lambda: ["app/models.py"])

    class Params:
        merged = factory.Trait(
            state=models.PullRequest.State.MERGED, merged_at=factory.LazyFunction(timezone.now)
        )


class WorkConnectionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WorkConnection

    workspace = factory.SubFactory(WorkspaceFactory)
    kind = models.WorkConnection.Kind.JIRA
    name = factory.Sequence(lambda n: f"Project {n}")

    class Params:
        stale = factory.Trait(
            last_synced_at=factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=20))
        )
        fresh = factory.Trait(
            last_synced_at=factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=5))
        )
        inactive = factory.Trait(active=False)


class AIArtifactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.AIArtifact

    workspace = factory.SubFactory(WorkspaceFactory)
    kind = "test_plan"
    prompt = "the prompt"
    output = "the output"
