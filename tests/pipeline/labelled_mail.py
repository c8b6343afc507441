"""A small labelled set of emails for the quality test of the embedded model (and the bench's
quality figures): invoices, newsletters, meeting notes and shipping notices, in English and
German, written as such emails are, and the demo mails with their labels. And queries that
share no word with the emails they are meant to find."""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage as MimeMessage
from email.policy import SMTP
from email.utils import format_datetime
from pathlib import Path

INVOICE, NEWSLETTER, MEETING, SHIPPING = "invoice", "newsletter", "meeting", "shipping"


@dataclass(frozen=True)
class Mail:
    label: str
    sender: str
    subject: str
    body: str


MAILS = [
    # --- invoices -------------------------------------------------------------------------
    Mail(
        INVOICE,
        "billing@northwind.example",
        "Invoice INV-2291 for October",
        "Dear customer,\n\nplease find attached invoice INV-2291 for consulting services in October. "
        "The total of EUR 4,350.00 is payable within 30 days to the account below.\n\nAccounts receivable",
    ),
    Mail(
        INVOICE,
        "accounts@acme-hosting.example",
        "Your payment is due: invoice 88120",
        "Hello,\n\ninvoice 88120 for your hosting plan (12 months) is now due. Amount payable: USD 1,188.00. "
        "Pay by card or bank transfer before the due date to avoid a late fee.",
    ),
    Mail(
        INVOICE,
        "finance@lumen.example",
        "Reminder: invoice 5512 overdue",
        "Hi,\n\nour records show that invoice 5512 (USD 640.00, net 14) has not been paid. Please arrange "
        "payment at your earliest convenience or send us the remittance advice.",
    ),
    Mail(
        INVOICE,
        "ar@globex.example",
        "Invoice for purchase order PO-7731",
        "Attached is our invoice for purchase order PO-7731: 40 units, unit price 25.00, VAT 19 %, "
        "total 1,190.00. Payment terms: 30 days net.",
    ),
    Mail(
        INVOICE,
        "buchhaltung@mueller-gmbh.example",
        "Rechnung Nr. 2024-117",
        "Sehr geehrte Damen und Herren,\n\nanbei erhalten Sie die Rechnung Nr. 2024-117 über 2.380,00 EUR "
        "inkl. MwSt. Bitte überweisen Sie den Betrag innerhalb von 14 Tagen auf unser Konto.",
    ),
    Mail(
        INVOICE,
        "rechnung@stadtwerke.example",
        "Ihre Rechnung für März",
        "Guten Tag,\n\nIhre Rechnung für den Abrechnungszeitraum März liegt vor. Der Rechnungsbetrag von "
        "86,40 EUR wird per Lastschrift von Ihrem Konto eingezogen.",
    ),
    Mail(
        INVOICE,
        "finanzen@kanzlei-berg.example",
        "Zahlungserinnerung Rechnung 4471",
        "Sehr geehrter Herr Weber,\n\nleider konnten wir für unsere Rechnung 4471 vom 3. Mai noch keinen "
        "Zahlungseingang feststellen. Wir bitten um Begleichung des offenen Betrags von 912,50 EUR.",
    ),
    Mail(
        INVOICE,
        "faktura@druckerei.example",
        "Rechnung zu Ihrem Auftrag 3390",
        "Hallo,\n\nfür Ihren Druckauftrag 3390 (500 Flyer, 250 Plakate) stellen wir Ihnen 1.204,00 EUR netto "
        "in Rechnung. Zahlbar ohne Abzug bis zum 30.06.",
    ),
    # --- newsletters ----------------------------------------------------------------------
    Mail(
        NEWSLETTER,
        "news@techweekly.example",
        "Tech Weekly #212: chips, clouds and a new phone",
        "This week: a new phone launch, chip makers report record sales, and three cloud outages "
        "explained. Read more on our website. You are receiving this because you subscribed. Unsubscribe.",
    ),
    Mail(
        NEWSLETTER,
        "hello@gardenclub.example",
        "Our monthly newsletter: spring planting",
        "In this issue: what to plant in April, readers' photos, and our upcoming seed swap. "
        "Manage your subscription or unsubscribe at any time.",
    ),
    Mail(
        NEWSLETTER,
        "updates@bookshelf.example",
        "New releases and staff picks this month",
        "Dear reader, here are this month's new releases, our staff picks and an interview with the "
        "author of the season's bestseller. Update your email preferences or unsubscribe below.",
    ),
    Mail(
        NEWSLETTER,
        "digest@devblog.example",
        "The developer newsletter: tips, tools, events",
        "Issue 48 brings five productivity tips, a review of new tools and a list of upcoming "
        "conferences. Forward this newsletter to a friend. Unsubscribe with one click.",
    ),
    Mail(
        NEWSLETTER,
        "newsletter@wanderfreunde.example",
        "Newsletter April: Neue Touren im Frühling",
        "Liebe Mitglieder, in dieser Ausgabe: neue Wandertouren, Tipps zur Ausrüstung und Termine im Mai. "
        "Sie erhalten diesen Newsletter, weil Sie ihn abonniert haben. Abmelden.",
    ),
    Mail(
        NEWSLETTER,
        "info@kochschule.example",
        "Unser Newsletter: Rezepte der Woche",
        "Hallo, diese Woche: drei schnelle Rezepte, ein Kurs für Brot backen und Neuigkeiten aus der "
        "Küche. Newsletter abbestellen oder Einstellungen ändern.",
    ),
    Mail(
        NEWSLETTER,
        "redaktion@stadtmagazin.example",
        "Stadtmagazin: Veranstaltungen am Wochenende",
        "Die Redaktion empfiehlt: Konzerte, Ausstellungen und Märkte am Wochenende. Mehr Berichte auf "
        "unserer Webseite. Wenn Sie keine Ausgaben mehr erhalten möchten, melden Sie sich hier ab.",
    ),
    Mail(
        NEWSLETTER,
        "aktuell@vereinsnews.example",
        "Vereinsnachrichten Mai",
        "Liebe Leserinnen und Leser, in der Mai-Ausgabe berichten wir über das Sommerfest, neue "
        "Mitglieder und den Jahresbericht. Abonnement verwalten oder abmelden.",
    ),
    # --- meeting notes --------------------------------------------------------------------
    Mail(
        MEETING,
        "pm@northwind.example",
        "Notes from Tuesday's project meeting",
        "Attendees: Ana, Ben, Chen. Agenda: release plan, open bugs, hiring. Decisions: the release "
        "moves to June 12. Action items: Ben drafts the release notes, Chen triages the bugs.",
    ),
    Mail(
        MEETING,
        "lead@globex.example",
        "Minutes of the weekly sync",
        "Minutes, weekly team sync. Present: the whole team except Dana. Discussed: budget for Q3, the "
        "vendor contract, onboarding. Next steps: Dana reviews the contract; next sync Thursday 10:00.",
    ),
    Mail(
        MEETING,
        "ops@lumen.example",
        "Recap: planning session and action items",
        "Thanks all for joining the planning session. Recap: we agreed on three goals for the quarter. "
        "Owners and deadlines are in the action item list. Follow-up meeting in two weeks.",
    ),
    Mail(
        MEETING,
        "chair@board.example",
        "Board meeting agenda and minutes",
        "Agenda for the board meeting: approval of the last minutes, the annual budget, any other "
        "business. Minutes of the previous meeting are attached for approval.",
    ),
    Mail(
        MEETING,
        "team@mueller-gmbh.example",
        "Protokoll der Teambesprechung vom Montag",
        "Teilnehmer: Frau Schmidt, Herr Koch, Frau Yilmaz. Tagesordnung: Urlaubsplanung, Kundenprojekt, "
        "Sonstiges. Beschlüsse: Das Projekt startet im Juli. Aufgaben: Herr Koch erstellt den Zeitplan.",
    ),
    Mail(
        MEETING,
        "sekretariat@schule.example",
        "Einladung und Tagesordnung zur Sitzung",
        "Hiermit lade ich zur nächsten Sitzung am Donnerstag um 18 Uhr ein. Tagesordnung: Protokoll der "
        "letzten Sitzung, Haushalt, Verschiedenes.",
    ),
    Mail(
        MEETING,
        "projekt@stadtwerke.example",
        "Ergebnisse der Abstimmungsrunde",
        "Zusammenfassung der Besprechung: Die Teilnehmer haben die nächsten Schritte festgelegt. "
        "Verantwortlich: Frau Lang. Nächster Termin: Mittwoch, 14 Uhr, Raum 2.",
    ),
    Mail(
        MEETING,
        "vorstand@verein.example",
        "Protokoll der Vorstandssitzung",
        "Anwesend: fünf Vorstandsmitglieder. Besprochen wurden der Haushalt, das Sommerfest und die "
        "Mitgliederversammlung. Beschluss: Die Versammlung findet im September statt.",
    ),
    # --- shipping notices -----------------------------------------------------------------
    Mail(
        SHIPPING,
        "orders@shopmate.example",
        "Your order #10293 has shipped",
        "Good news! Your order #10293 has shipped with UPS. Tracking number 1Z999AA10123456784. "
        "Estimated delivery: Thursday. Track the shipment in your account.",
    ),
    Mail(
        SHIPPING,
        "noreply@bookshelf.example",
        "Shipment confirmation for order 55-210",
        "We have handed your order 55-210 to the carrier. Expected delivery between Monday and "
        "Wednesday. You can follow the package with tracking code JD0146000001.",
    ),
    Mail(
        SHIPPING,
        "delivery@fastpost.example",
        "Delivery scheduled for tomorrow",
        "Your package is scheduled for delivery tomorrow between 9:00 and 13:00. If nobody is home, "
        "the courier will leave it with a neighbour. Tracking ID FP-448812.",
    ),
    Mail(
        SHIPPING,
        "support@gadgetstore.example",
        "Order dispatched: tracking details inside",
        "Your items were dispatched from our warehouse today. Carrier: DHL Express. Tracking number "
        "4412 8890 12. Delivery usually takes 2-3 business days.",
    ),
    Mail(
        SHIPPING,
        "versand@moebelhaus.example",
        "Ihre Bestellung wurde versendet",
        "Guten Tag, Ihre Bestellung 7781 wurde heute an DHL übergeben. Sendungsnummer: 00340434161094. "
        "Die Zustellung erfolgt voraussichtlich am Freitag.",
    ),
    Mail(
        SHIPPING,
        "info@paketdienst.example",
        "Zustellung Ihrer Sendung am Dienstag",
        "Ihre Sendung wird am Dienstag zwischen 10 und 14 Uhr zugestellt. Sendungsverfolgung unter "
        "Angabe der Nummer H1234567890. Bei Abwesenheit wird die Sendung beim Nachbarn abgegeben.",
    ),
    Mail(
        SHIPPING,
        "shop@buchladen.example",
        "Versandbestätigung Bestellung 3312",
        "Vielen Dank für Ihre Bestellung. Wir haben die Ware heute verschickt. Die Lieferung erfolgt "
        "mit der Deutschen Post innerhalb von zwei Werktagen. Sendungsnummer RR123456789DE.",
    ),
    Mail(
        SHIPPING,
        "logistik@elektro.example",
        "Lieferung angekündigt",
        "Ihr Paket befindet sich in der Zustellung. Der Fahrer liefert heute bis 18 Uhr. "
        "Sendungsverfolgung: Nummer 556677. Lieferadresse: wie in der Bestellung angegeben.",
    ),
]

# The demo mails (pipeline/demo_mail) that carry one label: their file and that label.
DEMO_MAILS = {
    "01_invoice.eml": INVOICE,
    "02_newsletter.eml": NEWSLETTER,
    "03_report_with_pdf.eml": MEETING,
    "04_rechnung_latin1.eml": INVOICE,
}


@dataclass(frozen=True)
class Query:
    text: str
    label: str  # the emails it should find


# Each shares no word with any email of its label (``test_index_quality`` checks): found by
# meaning, or not at all. The first two are the ones the index was asked to find.
QUERIES = [
    Query("get-together", MEETING),
    Query("parcel on its way", SHIPPING),
    Query("money we owe", INVOICE),
    Query("fresh articles for subscribers", NEWSLETTER),
    Query("Treffen mit Kollegen", MEETING),
    Query("Paketbote", SHIPPING),
]


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def raw(mail: Mail, number: int) -> bytes:
    message = MimeMessage(policy=SMTP)
    message["From"] = mail.sender
    message["To"] = "inbox@example.org"
    message["Subject"] = mail.subject
    message["Date"] = format_datetime(datetime(2026, 5, 1, 9, 0, tzinfo=UTC) + timedelta(hours=number))
    message["Message-ID"] = f"<labelled-{number}@example.org>"
    message.set_content(mail.body)
    return message.as_bytes()


DEMO_MAIL = Path(__file__).resolve().parents[2] / "pipeline" / "demo_mail"


def labelled_raw_mails() -> list[tuple[str, bytes]]:
    """(label, raw email) of the whole set: the demo mails with one label, then the others."""
    found = [(label, (DEMO_MAIL / name).read_bytes()) for name, label in DEMO_MAILS.items()]
    return found + [(mail.label, raw(mail, number)) for number, mail in enumerate(MAILS)]


@dataclass(frozen=True)
class Quality:
    neighbours_sharing_label: int
    emails: int
    queries_found: list[str]
    queries_missed: list[str]

    @property
    def neighbour_share(self) -> float:
        return self.neighbours_sharing_label / self.emails

    def __str__(self) -> str:
        return (
            f"nearest neighbour shares the label for {self.neighbours_sharing_label}/{self.emails} "
            f"({self.neighbour_share:.0%}); queries found in the top 3: {len(self.queries_found)}/"
            f"{len(self.queries_found) + len(self.queries_missed)}"
            + (f" (missed: {', '.join(self.queries_missed)})" if self.queries_missed else "")
        )


def evaluate() -> Quality:
    """Import and process the set in this process (the real pipeline: parse, classify, full
    text and vectors), then ask the index: each email's nearest other email, and each query's
    top 3. Needs a database and an empty index."""
    from pipeline import intake, process, semantic

    labels = {}
    for label, data in labelled_raw_mails():
        email = intake.receive(data, source="labelled").email
        process.process_email(email.pk)
        labels[email.pk] = label
    sharing = 0
    for email_id, label in labels.items():
        from pipeline.models import EmailMessage

        nearest = semantic.similar(EmailMessage.objects.get(pk=email_id), limit=1) or []
        sharing += bool(nearest) and labels.get(nearest[0].email.pk) == label
    found, missed = [], []
    for query in QUERIES:
        top = [labels.get(hit.email.pk) for hit in semantic.by_meaning(query.text, limit=3)]
        (found if query.label in top else missed).append(query.text)
    return Quality(sharing, len(labels), found, missed)


# --- what the model is measured against: vectors that know nothing of meaning ------------------


def random_vectors(dimensions: int) -> Callable[[list[str]], list[list[float]]]:
    """A vector of noise per text (the same text, the same noise)."""

    def embed(texts: list[str]) -> list[list[float]]:
        return [
            _unit([random.Random(zlib.crc32(t.encode())).gauss(0, 1) for _ in range(dimensions)])
            for t in texts
        ]

    return embed


def word_hash_vectors(dimensions: int) -> Callable[[list[str]], list[list[float]]]:
    """A bag of words hashed into ``dimensions`` buckets: texts that share words are near."""

    def embed(texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * dimensions
            for word in re.findall(r"\w+", text.lower()):
                vector[zlib.crc32(word.encode()) % dimensions] += 1.0
            vectors.append(_unit(vector))
        return vectors

    return embed


def _unit(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]
