import cProfile, pstats, time, os, sys
from bench.lib import project
project.open_database(sys.argv[1] if len(sys.argv) > 1 else None, "jp_workflow_bench")
import jobs
from django.db import transaction, connection
from django.test.utils import CaptureQueriesContext
from django.test import Client
from django.contrib.auth.models import User, Permission
from bench.lib.fill import wipe
from bench.workflows import TABLES
def step(n): return jobs.step("test.step", {"value": n}, name=f"s{n}")
wipe(TABLES)
wf = jobs.start(jobs.group([step(n) for n in range(9999)], then=step(9999)), name="x")
user, _ = User.objects.get_or_create(username="bench-viewer", defaults={"is_staff": True})
user.user_permissions.set(Permission.objects.filter(content_type__app_label="platform", codename="view_jobs"))
client = Client(HTTP_HOST="localhost"); client.force_login(user)
url = jobs.workflow_url(wf)
client.get(url)
with CaptureQueriesContext(connection) as q:
    t=time.perf_counter(); client.get(url); print("ms", (time.perf_counter()-t)*1000)
for x in q.captured_queries: print(x["time"], x["sql"][:150])
pr = cProfile.Profile(); pr.enable(); client.get(url); pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(15)
