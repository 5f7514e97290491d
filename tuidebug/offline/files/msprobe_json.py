"""msprobe's `dump.json` read as a stream of calls (issue 29), never as one document.

A big model's dump.json is hundreds of MB (the issue's benchmark: 1M tensor records in
~300 MB); `json.loads` of it costs ~5× the file in Python objects before the first call is
looked at. Here the text is read in chunks and the top level is walked by hand: the header
fields (`task`, `level`…) and then each entry of `data`, one call's record at a time, decoded
by the stdlib's C scanner (the same code `json.loads` runs, so no speed is lost and the
accepted grammar is the same: NaN/Infinity/-Infinity admitted through `parse_constant`, no
other non-JSON token). Memory is one chunk plus one call's record, whatever the file size.

A value cut by a chunk's end is retried once more text is read (the chunk read then doubles,
so a hostile file of one endless string costs a linear, not quadratic, scan). Every error
is one `MsprobeError` sentence naming the file, the line and the column, as `json.loads`
would say it. A text that does not start with `{` is `NotAnObject`: the caller reads it whole
(bounded) to say what it is instead.
"""

from __future__ import annotations

import codecs
import json
import json.scanner
import math
import re
from collections.abc import Callable, Iterator
from typing import BinaryIO

__all__ = [
    "CHUNK_CHARS",
    "JsonText",
    "MsprobeError",
    "NotAnObject",
    "file_source",
    "no_constant",
    "text_source",
    "top_level",
]

# text read per refill: big enough that the per-chunk work (a slice, a newline count) is
# nothing beside the scan, small enough to be no memory at all beside a dump
CHUNK_CHARS = 4 << 20
# an error this close to the end of the text read so far may be a value cut by the chunk
# (`Infin|ity`, `1e|+5`, `"\u12|34"`): more text is read and the value scanned again
_MARGIN = 64
_WS = re.compile(r"[ \t\n\r]*")


class MsprobeError(ValueError):
    """An msprobe file or folder that cannot be read; the message is one sentence."""


class NotAnObject(Exception):
    """The text does not start with `{` (after white space)."""


def no_constant(token: str) -> float:
    # json admits NaN/Infinity/-Infinity through this hook only; they are msprobe's tokens
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[token]


# the C scanner when the interpreter has it (CPython does): `scan(text, i)` → (value, end)
_SCAN = json.scanner.make_scanner(json.JSONDecoder(parse_constant=no_constant))  # type: ignore[arg-type]


def text_source(text: str) -> Callable[[int], str]:
    """A reader (`read(n)` → more text, "" at the end) over text already in memory."""
    parts = [text]

    def read(_n: int) -> str:
        return parts.pop() if parts else ""

    return read


def file_source(handle: BinaryIO, label: str, limit: int) -> Callable[[int], str]:
    """A reader of `handle`'s UTF-8 text, `n` characters' worth of bytes at a time, refusing
    more than `limit` bytes in all (a file that grows while read)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    total = 0

    def read(n: int) -> str:
        nonlocal total
        while True:
            data = handle.read(n)
            total += len(data)
            if total > limit:
                raise MsprobeError(
                    f"{label} grew past the {limit:,}-byte limit while it was read, so it "
                    "was not read."
                )
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError:
                raise MsprobeError(f"{label} is not UTF-8 text, so it was not read.") from None
            if text or not data:
                return text
            # the chunk ended inside one multi-byte character: read on

    return read


class JsonText:
    """The text being read: `buf[pos:]` is what is not consumed yet."""

    def __init__(self, read: Callable[[int], str], label: str) -> None:
        self._read = read
        self.label = label
        self.buf = ""
        self.pos = 0
        self.eof = False
        # where buf starts, for messages: newlines dropped, and the column of buf[0]
        self._lines = 0
        self._column = 0

    def fill(self, size: int | None = None) -> bool:
        """Drop the consumed text and append more; False at the end of the text."""
        if self.eof:
            return False
        more = self._read(size or CHUNK_CHARS)
        if not more:
            self.eof = True
            return False
        buf, pos = self.buf, self.pos
        dropped = buf.count("\n", 0, pos)
        if dropped:
            self._lines += dropped
            self._column = pos - buf.rfind("\n", 0, pos) - 1
        else:
            self._column += pos
        self.buf = buf[pos:] + more
        self.pos = 0
        return True

    def error(self, msg: str, pos: int) -> MsprobeError:
        buf = self.buf
        line = self._lines + buf.count("\n", 0, pos) + 1
        newline = buf.rfind("\n", 0, pos)
        column = pos - newline if newline >= 0 else self._column + pos + 1
        return MsprobeError(
            f"{self.label} is not valid JSON ({msg} at line {line} column {column}), "
            "so it was not read."
        )

    def peek(self) -> str:
        """The next character after white space ("" at the end), not consumed."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        """Consume the next character, one of `chars`, else raise naming `what`."""
        char = self.peek()
        if not char or char not in chars:
            raise self.error(f"Expecting {what}", self.pos)
        self.pos += 1
        return char

    def value(self) -> object:
        """The JSON value at the current position, consumed."""
        while True:
            self.peek()  # the scanner starts at a value, not at white space
            buf, pos = self.buf, self.pos
            try:
                value, end = _SCAN(buf, pos)
            except StopIteration as stop:
                # no value where one must start: `stop.value` is that place, which may lie
                # deep inside the value begun at `pos` (the C scanner does not wrap it)
                at = stop.value if isinstance(stop.value, int) else pos
                if len(buf) - at < _MARGIN and self.fill(max(CHUNK_CHARS, len(buf))):
                    continue
                raise self.error("Expecting value", at) from None
            except json.JSONDecodeError as err:
                cut = len(buf) - err.pos < _MARGIN or err.msg.startswith("Unterminated string")
                if cut and self.fill(max(CHUNK_CHARS, len(buf))):
                    continue
                raise self.error(err.msg, err.pos) from None
            except RecursionError:
                # the C scanner counts its nesting: a million `[` ends here, not in a crash
                raise MsprobeError(
                    f"{self.label} nests too deeply to be JSON from msprobe."
                ) from None
            if (
                len(buf) - end < _MARGIN
                and not isinstance(value, dict | list | str)
                and not self.eof
                and self.fill(max(CHUNK_CHARS, len(buf)))
            ):
                continue  # a bare number may go on in the next chunk (`0|.5`, `1|e5`)
            self.pos = end
            return value

    def key(self) -> str:
        if self.peek() != '"':
            raise self.error("Expecting property name enclosed in double quotes", self.pos)
        key = self.value()
        assert isinstance(key, str)
        self.expect(":", "':' delimiter")
        return key


def top_level(
    text: JsonText, header: dict[str, object], data_key: str = "data"
) -> Iterator[tuple[str, object]]:
    """The members of the top-level object's `data_key` object, in file order, one at a
    time; every other top-level member goes into `header` as it is met (msprobe writes
    them first). `header[data_key]` is set to True once that object was walked, or to the
    value itself when it is no object. Raises `NotAnObject` before anything is consumed
    when the text does not start with `{`."""
    if text.peek() != "{":
        raise NotAnObject
    text.pos += 1
    if text.peek() == "}":
        text.pos += 1
    else:
        while True:
            key = text.key()
            if key == data_key and text.peek() == "{":
                text.pos += 1
                if text.peek() == "}":
                    text.pos += 1
                else:
                    while True:
                        name = text.key()
                        yield name, text.value()
                        if text.expect(",}", "',' delimiter") == "}":
                            break
                header[data_key] = True
            else:
                header[key] = text.value()
            if text.expect(",}", "',' delimiter") == "}":
                break
    if text.peek():
        raise text.error("Extra data", text.pos)
