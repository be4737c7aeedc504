"""``JsonSerializer``: LangGraph's ``SerializerProtocol`` as JSON only, with an allow-list.

No pickle, no msgpack extension types, and nothing that imports a module or
looks a class up by a name read from storage: decoding maps each tag to a
constructor fixed in this module (or registered by the caller in ``allow``).

Plain JSON values (``str``, ``int``, ``float``, ``bool``, ``None``, lists,
dicts with ``str`` keys) are stored as they are. Tagged objects
(``{"__sqlstore__": tag, ...}``) carry the rest:

* ``tuple``, ``set``, ``frozenset``, ``bytes``, ``datetime``, ``date``,
  ``time``, ``timedelta``, ``uuid``, ``decimal``, and ``dict`` (a mapping with
  non-``str`` keys, or one that uses the tag key itself);
* LangChain messages (``message``: every class of ``langchain_core.messages``
  that LangGraph state holds), LangGraph's ``Send``, ``Interrupt``,
  ``Command`` and ``Overwrite``;
* exceptions, stored as their ``repr`` text (as LangGraph's own serializer
  stores the ``__error__`` writes), so reading one never builds an exception;
* ``object``: an instance of a type the caller allowed (a dataclass, a
  pydantic model or an ``Enum``), by ``module:qualname``, rebuilt only when
  that name is in this serializer's allow-list.

Anything else raises :class:`UnsupportedValue` when the checkpoint is put, so
nothing is stored half-way; allow your own types with
``JsonSerializer(allow=[MyState, MyEnum])``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core import messages as lc_messages
from langgraph.types import Command, Interrupt, Overwrite, Send, TimeoutPolicy

from sqlstore.checkpoints import JSON_TYPE, TAG_KEY
from sqlstore.errors import StoreError

_TAG_TEXT = json.dumps(TAG_KEY)
"""How the tag key appears in encoded JSON (keys are never escaped differently by dumps)."""

_PLAIN = json.JSONDecoder()

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""One encoder for every value (``json.dumps`` with options builds one per call)."""

MESSAGE_CLASSES: dict[str, type[lc_messages.BaseMessage]] = {
    cls.__name__: cls
    for cls in (
        lc_messages.HumanMessage,
        lc_messages.HumanMessageChunk,
        lc_messages.AIMessage,
        lc_messages.AIMessageChunk,
        lc_messages.SystemMessage,
        lc_messages.SystemMessageChunk,
        lc_messages.ToolMessage,
        lc_messages.ToolMessageChunk,
        lc_messages.ChatMessage,
        lc_messages.ChatMessageChunk,
        lc_messages.FunctionMessage,
        lc_messages.FunctionMessageChunk,
        lc_messages.RemoveMessage,
    )
}
"""LangChain message classes that round-trip, by class name (the tag's ``class``)."""


class UnsupportedValue(StoreError, TypeError):
    """A value the JSON serializer has no allowed form for (nothing was stored)."""


class CorruptValue(StoreError, ValueError):
    """Stored bytes that are not valid ``sqlstore-json/1`` data, or name a type not allowed."""


def type_name(cls: type) -> str:
    """Return the ``module:qualname`` a registered type is stored under."""
    return f"{cls.__module__}:{cls.__qualname__}"


class JsonSerializer:
    """Serialize LangGraph checkpoints, channel values and writes as tagged JSON.

    Args:
        allow: the caller's own types to accept: dataclasses, pydantic models
            (``model_dump``/``model_validate``) and ``Enum`` classes. Each is
            stored by ``module:qualname`` and rebuilt only by a serializer that
            allows the same type.

    ``dumps_typed`` returns ``("sqlstore-json/1", utf-8 JSON)``;
    ``loads_typed`` also accepts LangGraph's ``("null", b"")`` and
    ``("bytes", data)``.
    """

    def __init__(self, *, allow: Iterable[type] = ()) -> None:
        self._allowed: dict[str, type] = {}
        for cls in allow:
            if not isinstance(cls, type):
                raise TypeError(f"allow takes classes, not {cls!r}")
            self._allowed[type_name(cls)] = cls
        self._hooked = json.JSONDecoder(object_hook=self._rebuild)

    def with_allowed(self, *types: type) -> JsonSerializer:
        """Return a serializer that also allows ``types``."""
        return JsonSerializer(allow=[*self._allowed.values(), *types])

    # -- SerializerProtocol ------------------------------------------------------

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Encode ``obj``.

        Raises:
            UnsupportedValue: a value (at any depth) has no allowed form.
        """
        return JSON_TYPE, self.dumps(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode what :meth:`dumps_typed` produced.

        Raises:
            CorruptValue: another type name, bad JSON, an unknown tag or a type
                not allowed here.
        """
        type_, raw = data
        if type_ == "null":
            return None
        if type_ == "bytes":
            return bytes(raw)
        if type_ != JSON_TYPE:
            raise CorruptValue(
                f"value of type {type_!r} cannot be read by the JSON serializer",
                hint="It was written with another serializer; pass that one as serde=.",
            )
        return self.loads(raw)

    def dumps(self, obj: Any) -> bytes:
        """Encode ``obj`` as UTF-8 JSON (see the module docstring).

        Plain JSON data (checked by :func:`is_plain`, much cheaper than
        :meth:`encode`'s copy) goes to the C encoder as it is.
        """
        return _ENCODER.encode(obj if is_plain(obj) else self.encode(obj)).encode()

    def loads(self, raw: bytes) -> Any:
        """Decode UTF-8 JSON produced by :meth:`dumps` (tags are rebuilt bottom-up)."""
        try:
            return self.loads_text(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise CorruptValue(f"stored value is not JSON: {exc}") from exc

    def loads_text(self, text: str) -> Any:
        """Decode JSON text made of what :meth:`dumps` produced (a listing's document)."""
        try:
            # Nothing tagged: the C scanner alone; else tags are rebuilt bottom-up.
            decoder = _PLAIN if _TAG_TEXT not in text else self._hooked
            value, end = decoder.raw_decode(text)
            if end != len(text):
                raise ValueError(f"extra data at position {end}")
            return value
        except CorruptValue:
            raise
        except ValueError as exc:
            raise CorruptValue(f"stored value is not JSON: {exc}") from exc

    # -- encoding ----------------------------------------------------------------

    def encode(self, obj: Any) -> Any:
        """Return the JSON document for ``obj``."""
        kind = type(obj)
        if obj is None or kind in (str, int, float, bool):
            return obj
        if kind is list:
            return [self.encode(v) for v in obj]
        if kind is dict:
            if TAG_KEY not in obj and all(type(k) is str for k in obj):
                return {k: self.encode(v) for k, v in obj.items()}
            return _tag("dict", items=[[self.encode(k), self.encode(v)] for k, v in obj.items()])
        encoder = _ENCODERS.get(kind)
        if encoder is not None:
            return encoder(self, obj)
        if isinstance(obj, lc_messages.BaseMessage) and kind.__name__ in MESSAGE_CLASSES:
            return _tag(
                "message", **{"class": kind.__name__, "data": self.encode(obj.model_dump())}
            )
        if isinstance(obj, BaseException):
            return repr(obj)
        if type_name(kind) in self._allowed:
            return self._encode_allowed(obj)
        raise UnsupportedValue(
            f"cannot store a value of type {type_name(kind)} as JSON",
            hint="Allow your own types: SqlstoreSaver(store, serde=JsonSerializer(allow=[...])).",
        )

    def _encode_allowed(self, obj: Any) -> Any:
        name = type_name(type(obj))
        if isinstance(obj, enum.Enum):
            return _tag("object", type=name, value=self.encode(obj.value))
        if dataclasses.is_dataclass(obj):
            data = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
            return _tag("object", type=name, data=self.encode(data))
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            return _tag("object", type=name, data=self.encode(dump()))
        raise UnsupportedValue(
            f"allowed type {name} is not a dataclass, pydantic model or Enum",
            hint="Convert it to plain JSON data in your graph state.",
        )

    # -- decoding ----------------------------------------------------------------

    def decode(self, doc: Any) -> Any:
        """Rebuild a value from an already parsed JSON document."""
        if isinstance(doc, list):
            return [self.decode(v) for v in doc]
        if isinstance(doc, dict):
            return self._rebuild({k: self.decode(v) for k, v in doc.items()})
        return doc

    def _rebuild(self, doc: dict[str, Any]) -> Any:
        """Turn one JSON object, whose members are already rebuilt, into its value."""
        tag = doc.get(TAG_KEY)
        if tag is None:
            return doc
        decoder = _DECODERS.get(tag) if isinstance(tag, str) else None
        if decoder is None:
            raise CorruptValue(f"stored value has an unknown tag {tag!r}")
        try:
            return decoder(self, doc)
        except CorruptValue:
            raise
        except (KeyError, TypeError, ValueError, decimal.InvalidOperation) as exc:
            raise CorruptValue(f"stored {tag!r} value is malformed: {exc}") from exc

    def _decode_object(self, doc: dict[str, Any]) -> Any:
        name = doc["type"]
        cls = self._allowed.get(name)
        if cls is None:
            raise CorruptValue(
                f"stored value of type {name} is not allowed by this serializer",
                hint="Pass the same JsonSerializer(allow=[...]) that wrote it.",
            )
        if issubclass(cls, enum.Enum):
            return cls(doc["value"])
        data = doc["data"]
        validate = getattr(cls, "model_validate", None)
        if callable(validate):
            return validate(data)
        return cls(**data)


def is_plain(obj: Any) -> bool:
    """True when ``obj`` is stored as it is: only exact JSON types, ``str`` keys, no tag key.

    ``json`` would silently turn a tuple into a list, a non-``str`` key into
    text and a ``str``/``int`` subclass into its base value; those (and every
    other type) go through :meth:`JsonSerializer.encode` instead.
    """
    kind = type(obj)
    if kind is str or kind is int or kind is float or kind is bool or obj is None:
        return True
    if kind is dict:
        if TAG_KEY in obj:
            return False
        # Loops, not all(generator): this runs for every value of every put.
        for key, value in obj.items():  # noqa: SIM110
            if type(key) is not str or not is_plain(value):
                return False
        return True
    if kind is list:
        for value in obj:  # noqa: SIM110
            if not is_plain(value):
                return False
        return True
    return False


def _tag(tag: str, **fields: Any) -> dict[str, Any]:
    return {TAG_KEY: tag, **fields}


def _encode_send(s: JsonSerializer, obj: Send) -> Any:
    timeout = None if obj.timeout is None else s.encode(dataclasses.asdict(obj.timeout))
    return _tag("send", node=obj.node, arg=s.encode(obj.arg), timeout=timeout)


def _decode_send(s: JsonSerializer, doc: dict[str, Any]) -> Send:
    timeout = doc.get("timeout")
    policy = None if timeout is None else TimeoutPolicy(**timeout)
    return Send(doc["node"], doc["arg"], timeout=policy)


def _encode_interrupt(s: JsonSerializer, obj: Interrupt[Any]) -> Any:
    schema = obj.response_schema
    if schema is not None and not isinstance(schema, dict):
        raise UnsupportedValue(
            "an Interrupt's response_schema must be a JSON schema dict to be stored",
            hint="Pass response_schema as a dict (e.g. Model.model_json_schema()).",
        )
    return _tag("interrupt", value=s.encode(obj.value), id=obj.id, schema=s.encode(schema))


def _decode_interrupt(s: JsonSerializer, doc: dict[str, Any]) -> Interrupt[Any]:
    return Interrupt(value=doc["value"], id=doc["id"], response_schema=doc.get("schema"))


def _encode_command(s: JsonSerializer, obj: Command[Any]) -> Any:
    return _tag(
        "command",
        graph=obj.graph,
        update=s.encode(obj.update),
        resume=s.encode(obj.resume),
        goto=s.encode(obj.goto),
    )


def _decode_command(s: JsonSerializer, doc: dict[str, Any]) -> Command[Any]:
    goto = doc.get("goto", [])
    return Command(
        graph=doc.get("graph"),
        update=doc.get("update"),
        resume=doc.get("resume"),
        goto=tuple(goto) if isinstance(goto, list) else goto,
    )


def _decode_message(s: JsonSerializer, doc: dict[str, Any]) -> lc_messages.BaseMessage:
    cls = MESSAGE_CLASSES.get(doc["class"])
    if cls is None:
        raise CorruptValue(f"stored message class {doc['class']!r} is not allowed")
    data = doc["data"]
    if not isinstance(data, dict):
        raise CorruptValue("stored message data is not an object")
    return cls(**data)


def _items(s: JsonSerializer, doc: dict[str, Any]) -> list[Any]:
    items = doc["items"]
    if not isinstance(items, list):
        raise CorruptValue("stored collection items are not a list")
    return items


def _decode_dict(s: JsonSerializer, doc: dict[str, Any]) -> dict[Any, Any]:
    return {_hashable(k): v for k, v in _items(s, doc)}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


_ENCODERS: dict[type, Callable[[JsonSerializer, Any], Any]] = {
    tuple: lambda s, o: _tag("tuple", items=[s.encode(v) for v in o]),
    set: lambda s, o: _tag("set", items=[s.encode(v) for v in o]),
    frozenset: lambda s, o: _tag("frozenset", items=[s.encode(v) for v in o]),
    bytes: lambda s, o: _tag("bytes", b64=base64.b64encode(o).decode("ascii")),
    dt.datetime: lambda s, o: _tag("datetime", iso=o.isoformat()),
    dt.date: lambda s, o: _tag("date", iso=o.isoformat()),
    dt.time: lambda s, o: _tag("time", iso=o.isoformat()),
    dt.timedelta: lambda s, o: _tag("timedelta", d=o.days, s=o.seconds, us=o.microseconds),
    uuid.UUID: lambda s, o: _tag("uuid", hex=o.hex),
    decimal.Decimal: lambda s, o: _tag("decimal", text=str(o)),
    Send: _encode_send,
    Interrupt: _encode_interrupt,
    Command: _encode_command,
    Overwrite: lambda s, o: _tag("overwrite", value=s.encode(o.value)),
}

_DECODERS: dict[str, Callable[[JsonSerializer, dict[str, Any]], Any]] = {
    "tuple": lambda s, d: tuple(_items(s, d)),
    "set": lambda s, d: {_hashable(v) for v in _items(s, d)},
    "frozenset": lambda s, d: frozenset(_hashable(v) for v in _items(s, d)),
    "dict": _decode_dict,
    "bytes": lambda s, d: base64.b64decode(d["b64"], validate=True),
    "datetime": lambda s, d: dt.datetime.fromisoformat(d["iso"]),
    "date": lambda s, d: dt.date.fromisoformat(d["iso"]),
    "time": lambda s, d: dt.time.fromisoformat(d["iso"]),
    "timedelta": lambda s, d: dt.timedelta(days=d["d"], seconds=d["s"], microseconds=d["us"]),
    "uuid": lambda s, d: uuid.UUID(hex=d["hex"]),
    "decimal": lambda s, d: decimal.Decimal(d["text"]),
    "message": _decode_message,
    "send": _decode_send,
    "interrupt": _decode_interrupt,
    "command": _decode_command,
    "overwrite": lambda s, d: Overwrite(d["value"]),
    "object": JsonSerializer._decode_object,
}
