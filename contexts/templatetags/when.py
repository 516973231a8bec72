"""`{{ value|when }}`: every time on the dashboard says its zone, the same way.

A time renders as `<time datetime="…ISO…">2026-05-04 09:30 UTC</time>` in the
server's zone (`TIME_ZONE`, UTC by default), with the zone's abbreviation,
so a reader never has to guess; the ISO value is there for machines.
"""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

_FORMATS = {"": "Y-m-d H:i", "s": "Y-m-d H:i:s", "time": "H:i"}


@register.filter(is_safe=True)
def when(value: datetime | None, precision: str = "") -> SafeString | str:
    """`value` in the current zone with its abbreviation; precision `s` adds seconds,
    `time` drops the date. Nothing (empty) for no time, so `|default:` applies."""
    if not isinstance(value, datetime):
        return ""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    shown = date_format(local, _FORMATS.get(precision, _FORMATS[""]))
    zone = date_format(local, "T")
    return format_html(
        '<time datetime="{}">{} {}</time>', local.isoformat(timespec="seconds"), shown, zone
    )
