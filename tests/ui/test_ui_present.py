"""The viewer's pure display helpers: record summaries (generic, for any integration's
events), durations, byte sizes, and which parts are inlined."""

from __future__ import annotations

from sqlstore import Part
from sqlstore.ui import present


def test_summary_of_sqlstore_events() -> None:
    """Text, tool calls, error results and gaps read as one line."""
    assert present.record_summary(True, "restarted\nrecorder") == "gap: restarted recorder"
    call = {"text": "", "data": {"call": {"id": "c", "name": "grep", "args": '{"q": 1}'}}}
    assert present.record_summary(False, call) == 'grep({"q": 1})'
    result = {"text": "", "data": {"result": {"call_id": "c", "content": "boom", "is_error": True}}}
    assert present.record_summary(False, result) == "error: boom"


def test_summary_of_a_nested_framework_item() -> None:
    """A framework item nested in data shows its role, type and text before other fields."""
    item = {
        "text": "",
        "data": {
            "item": {
                "id": "msg_1",
                "status": "completed",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "The tests pass now."}],
            }
        },
    }
    summary = present.record_summary(False, item)
    assert summary.startswith("type=message · role=assistant · type=output_text")
    assert "text=The tests pass now." in summary


def test_durations_and_sizes() -> None:
    """Durations pick µs, ms or s; sizes a binary unit."""
    assert [present.duration_text(n) for n in (850, 12_500, 3_200_000)] == [
        "850 µs",
        "12.5 ms",
        "3.20 s",
    ]
    assert [present.human_bytes(n) for n in (512, 1536, 3 * 2**20)] == [
        "512 B",
        "1.5 KiB",
        "3.0 MiB",
    ]


def test_only_bounded_raster_images_are_inlined() -> None:
    """PNG is inlined as a data URL; SVG and oversized images are only described."""
    assert present.part_view(Part(mime_type="image/png", data=b"x")).src.startswith(
        "data:image/png;base64,"
    )
    assert present.part_view(Part(mime_type="image/svg+xml", data=b"<svg/>")).src == ""
    big = b"x" * (present.IMAGE_INLINE_MAX_BYTES + 1)
    assert present.part_view(Part(mime_type="image/png", data=big)).src == ""
    linked = present.part_view(Part(kind="file", url="https://example.com/a.pdf"))
    assert linked.src == "" and linked.url == "https://example.com/a.pdf"
