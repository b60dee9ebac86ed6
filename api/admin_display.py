"""Compact list cells for the admin, so that its lists fit 1400 px: long values cut short
with the whole value on hover, times without the words Django spells them with."""
import datetime as dt

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator


def truncated(text: str | None, length: int) -> SafeString:
    """`text` cut to `length` characters (an ellipsis included), whole on hover."""
    text = "" if text is None else str(text)
    return format_html('<span title="{}">{}</span>', text, Truncator(text).chars(length))


def short_time(value: dt.datetime | None, form: str = "%Y-%m-%d %H:%M:%S") -> SafeString | str:
    """The time (UTC, the service's zone) in `form` on one line, its ISO form on hover."""
    if value is None:
        return "-"
    value = timezone.localtime(value)
    return format_html('<span style="white-space: nowrap" title="{}">{}</span>',
                       value.isoformat(), value.strftime(form))
