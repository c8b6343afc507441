"""An email's text cut into chunks for the vector index: each at most ``size`` characters,
each starting ``overlap`` characters before the previous one ended, so a sentence cut at a
chunk's end is whole in the next one. Cuts fall on whitespace where there is some near the
end (a word is not split in two), else exactly at ``size``. The text is bounded before it
gets here (``PIPELINE_MAX_TEXT``), so the number of chunks is too."""

from __future__ import annotations


def chunks(text: str, size: int, overlap: int) -> list[str]:
    """The chunks of ``text`` (whitespace-only chunks left out); none for an empty text."""
    text = text.strip()
    found: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            # Back to the last whitespace in the chunk's last quarter, if there is one.
            cut = text.rfind(" ", start + size * 3 // 4, end)
            cut = max(cut, text.rfind("\n", start + size * 3 // 4, end))
            if cut > start:
                end = cut
        piece = text[start:end].strip()
        if piece:
            found.append(piece)
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
    return found
