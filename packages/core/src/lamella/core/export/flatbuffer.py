"""A small FlatBuffers writer and reader: the binary layout `jax.export` serializes into.

Only what the Exported schema needs: tables of scalars and references,
strings, byte vectors, vectors of scalars and of tables. The writer builds the
buffer back to front, as FlatBuffers builders do, so every reference points
forward; the reader follows vtables and checks every read against the buffer's
end, so damaged bytes give a `ValueError` rather than garbage.

>>> b = Builder()
>>> name = b.string("f")
>>> root = b.table([(0, "H", 3), (1, "offset", name)])
>>> t = root_table(b.finish(root))
>>> t.scalar(0, "H", 0), t.string(1), t.string(2)
(3, 'f', None)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any


class Builder:
    """Writes a buffer from its end: children first, then the tables naming them.

    Positions handed out (`string`, `table`, ...) count bytes from the end of
    the buffer, which never move as more is written in front.
    """

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        self._max_align = 4

    def _prepend(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)

    def _align(self, alignment: int, following: int) -> None:
        """Pads so that, once ``following`` more bytes are written, the size is aligned."""
        self._max_align = max(self._max_align, alignment)
        pad = -(self._size + following) % alignment
        if pad:
            self._prepend(bytes(pad))

    def _reference(self, target: int) -> bytes:
        """A 4-byte forward reference, to be written next, to the object at ``target``."""
        return struct.pack("<I", self._size + 4 - target)

    def _vector(self, payload: bytes, count: int, alignment: int) -> int:
        self._align(max(4, alignment), len(payload))
        self._prepend(payload)
        self._align(4, 4)
        self._prepend(struct.pack("<I", count))
        return self._size

    def string(self, text: str) -> int:
        """A UTF-8 string (NUL-terminated, as the format wants)."""
        data = text.encode()
        return self._vector(data + b"\0", len(data), 1)

    def bytes_vector(self, data: bytes) -> int:
        return self._vector(bytes(data), len(data), 1)

    def scalar_vector(self, fmt: str, values: Sequence[int]) -> int:
        """A vector of scalars of struct format ``fmt`` ('B', 'H', 'I', ...)."""
        return self._vector(struct.pack(f"<{len(values)}{fmt}", *values), len(values),
                            struct.calcsize(fmt))

    def reference_vector(self, targets: Sequence[int]) -> int:
        """A vector of references to tables or strings written earlier."""
        self._align(4, 4 * len(targets))
        for target in reversed(targets):
            self._prepend(self._reference(target))
        self._prepend(struct.pack("<I", len(targets)))
        return self._size

    def table(self, fields: Sequence[tuple[int, str, Any]]) -> int:
        """A table from (slot, kind, value): kind a struct format for a scalar, or
        'offset' for a reference; a None value leaves the slot absent."""
        fields = [f for f in fields if f[2] is not None]
        end = self._size
        positions: dict[int, int] = {}
        # Widest first, so narrow fields fill the padding of wide ones.
        for slot, kind, value in sorted(fields, key=lambda f: -_width(f[1])):
            if kind == "offset":
                self._align(4, 4)
                self._prepend(self._reference(value))
            else:
                self._align(_width(kind), _width(kind))
                self._prepend(struct.pack("<" + kind, value))
            positions[slot] = self._size
        slots = max(positions, default=-1) + 1
        vtable_size = 4 + 2 * slots
        self._align(4, 4)
        # The table opens with the signed distance back to its vtable, which is
        # written right in front of it.
        self._prepend(struct.pack("<i", vtable_size))
        start = self._size
        vtable = [vtable_size, start - end] + [start - positions[s] if s in positions else 0
                                               for s in range(slots)]
        self._prepend(struct.pack(f"<{len(vtable)}H", *vtable))
        return start

    def finish(self, root: int) -> bytearray:
        """The whole buffer, opening with the reference to table ``root``."""
        self._align(self._max_align, 4)
        self._prepend(self._reference(root))
        return bytearray(b"".join(reversed(self._chunks)))


def _width(kind: str) -> int:
    return 4 if kind == "offset" else struct.calcsize(kind)


class Table:
    """A table inside ``buf`` at byte ``pos``; fields are read by slot number."""

    __slots__ = ("buf", "pos", "_vtable", "_vtable_size")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int):
        self.buf = buf
        self.pos = pos
        self._vtable = pos - _read(buf, "<i", pos)
        self._vtable_size = _read(buf, "<H", self._vtable)

    def _field(self, slot: int) -> int:
        """The field's byte position, or 0 when absent."""
        entry = 4 + 2 * slot
        if entry >= self._vtable_size:
            return 0
        offset = _read(self.buf, "<H", self._vtable + entry)
        return self.pos + offset if offset else 0

    def _target(self, slot: int) -> int:
        at = self._field(slot)
        return at + _read(self.buf, "<I", at) if at else 0

    def scalar(self, slot: int, fmt: str, default: Any) -> Any:
        at = self._field(slot)
        return _read(self.buf, "<" + fmt, at) if at else default

    def table(self, slot: int) -> Table | None:
        at = self._target(slot)
        return Table(self.buf, at) if at else None

    def _vector(self, slot: int) -> tuple[int, int]:
        at = self._target(slot)
        if not at:
            return 0, 0
        count = _read(self.buf, "<I", at)
        return at + 4, count

    def string(self, slot: int) -> str | None:
        at = self._target(slot)
        return _string_at(self.buf, at) if at else None

    def bytes(self, slot: int) -> bytes:
        start, count = self._vector(slot)
        if start + count > len(self.buf):
            raise ValueError("byte vector runs past the end of the buffer")
        return bytes(self.buf[start:start + count])

    def scalars(self, slot: int, fmt: str) -> list[Any]:
        start, count = self._vector(slot)
        size = struct.calcsize(fmt)
        if start + count * size > len(self.buf):
            raise ValueError("vector runs past the end of the buffer")
        return list(struct.unpack_from(f"<{count}{fmt}", self.buf, start)) if count else []

    def _references(self, slot: int) -> list[int]:
        start, count = self._vector(slot)
        return [start + 4 * i + _read(self.buf, "<I", start + 4 * i) for i in range(count)]

    def tables(self, slot: int) -> list[Table]:
        return [Table(self.buf, at) for at in self._references(slot)]

    def strings(self, slot: int) -> list[str]:
        return [_string_at(self.buf, at) for at in self._references(slot)]


def root_table(buf: bytes | bytearray | memoryview) -> Table:
    """The table a finished buffer opens with."""
    return Table(buf, _read(buf, "<I", 0))


def _read(buf: Any, fmt: str, at: int) -> Any:
    if at < 0:
        raise ValueError(f"reference to byte {at}, before the start of the buffer")
    try:
        return struct.unpack_from(fmt, buf, at)[0]
    except struct.error:
        raise ValueError(f"read at byte {at} runs past the end of a {len(buf)}-byte "
                         "buffer") from None


def _string_at(buf: Any, at: int) -> str:
    count = _read(buf, "<I", at)
    if at + 4 + count > len(buf):
        raise ValueError("string runs past the end of the buffer")
    return bytes(buf[at + 4:at + 4 + count]).decode()
