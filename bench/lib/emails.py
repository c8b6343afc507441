"""Generated emails for the pipeline benchmark, and its tables wiped between runs.
Needs Django set up first (``bench.lib.project.setup``)."""

from __future__ import annotations

import random
from email.message import EmailMessage as MimeMessage
from email.policy import SMTP

from django.core.management import call_command
from django.db import connection

from tests.pipeline.corpus import minimal_pdf

WORDS = [
    "invoice",
    "payment",
    "meeting",
    "agenda",
    "report",
    "quarterly",
    "budget",
    "shipment",
    "tracking",
    "help",
    "error",
    "newsletter",
    "unsubscribe",
    "project",
    "status",
    "update",
    "customer",
    "order",
    "delivery",
    "schedule",
    "review",
]


def _text(rng: random.Random, size: int) -> str:
    words, total = [], 0
    while total < size:
        word = rng.choice(WORDS)
        words.append(word)
        total += len(word) + 1
    return " ".join(words)


def generate(count: int, seed: int = 7) -> list[bytes]:
    """``count`` emails: 75 % small plain, 15 % HTML, 8 % with a PDF, 2 % with a 100-500 KB
    binary; every tenth is a second delivery of an earlier one (same Message-ID)."""
    rng = random.Random(seed)
    pdf = minimal_pdf("Quarterly revenue grew strongly")
    emails: list[bytes] = []
    for number in range(count):
        if number % 10 == 9 and emails:
            original = emails[rng.randrange(len(emails))]
            emails.append(f"Received: from relay{number}.example.net; bench\r\n".encode() + original)
            continue
        msg = MimeMessage()
        msg["From"] = f"sender{number % 500}@example.com"
        msg["To"] = "inbox@example.org"
        msg["Subject"] = f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} #{number}"
        msg["Message-ID"] = f"<bench-{number}@example.com>"
        kind = rng.random()
        if kind < 0.75:
            msg.set_content(_text(rng, rng.randint(500, 4000)))
        elif kind < 0.90:
            paragraphs = "".join(f"<p>{_text(rng, 400)}</p>" for _ in range(rng.randint(20, 60)))
            msg.set_content(f"<html><body>{paragraphs}</body></html>", subtype="html")
        elif kind < 0.98:
            msg.set_content(_text(rng, 1000))
            msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="report.pdf")
            msg.add_attachment(_text(rng, 20_000), filename="notes.txt")
        else:
            msg.set_content(_text(rng, 500))
            blob = rng.randbytes(rng.randint(100_000, 500_000))
            msg.add_attachment(blob, maintype="application", subtype="octet-stream", filename="data.bin")
        emails.append(msg.as_bytes(policy=SMTP))
    return emails


def wipe() -> None:
    """Migrate, then empty the pipeline's and the engine's tables."""
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE pipeline_emailmessage, pipeline_origin, pipeline_pipelinerun, pipeline_parsedemail, "
            "pipeline_attachment, pipeline_classification, pipeline_indexrecord, pipeline_errorlogentry, "
            "pipeline_modelcallswitch, jobs_job, jobs_attempt, jobs_worker RESTART IDENTITY CASCADE"
        )
