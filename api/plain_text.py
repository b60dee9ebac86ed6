"""Text answers (echo's `Got it!`, a subscription's id): the bare value of the interface, which
Arrowhead clients read as it is (a Java client parses the id with `UUID.fromString`), and the
same value as a line, ending in a newline, for the command-line HTTP tools, so that a terminal
shows the next prompt on a line of its own (docs/decisions.md, "Answers end with a newline")."""
from django.http import HttpRequest, HttpResponse

# The User-Agent beginnings of the tools a person types into a terminal.
COMMAND_LINE_AGENTS = ("curl/", "Wget/", "HTTPie/", "xh/")


def text_response(request: HttpRequest, text: str, *, status: int = 200) -> HttpResponse:
    if request.headers.get("User-Agent", "").startswith(COMMAND_LINE_AGENTS):
        text += "\n"
    return HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")
