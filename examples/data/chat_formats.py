"""Chat data in the formats people have, read as conversations (prepare_sft.py).

Every format becomes one conversation per JSONL line: a list of {"role", "content"} messages
with role "system", "user", "assistant" or "tool" (the message list a chat template takes).

  messages   OpenAI's chat format: {"messages": [{"role": ..., "content": ...}, ...]}; content
             is a string, or a list of parts of which the {"type": "text", "text": ...} ones
             are joined (other part types are refused)
  alpaca     Stanford Alpaca's: {"instruction": ..., "input": ..., "output": ...}; the user
             turn is the instruction, then a blank line and the input when that is not empty;
             the assistant turn is the output; an optional "system" string comes first
  sharegpt   ShareGPT's: {"conversations": [{"from": ..., "value": ...}, ...]}, from "human" /
             "user", "gpt" / "assistant" / "model", "system", "tool"; an optional top-level
             "system" string comes first
  pairs      rpc's earlier format: {"prompt": ..., "response": ...} (one user and one
             assistant turn)

detect_format(obj) names the format of one object by its keys. Every error is a ValueError
whose message starts with "FILE:LINE: ".
"""
import json

FORMATS = ("messages", "alpaca", "sharegpt", "pairs")
ROLES = ("system", "user", "assistant", "tool")
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "model": "assistant", "system": "system", "tool": "tool"}


def detect_format(obj):
    """The format whose key `obj` holds ("messages", "conversations", "instruction", "prompt"),
    or None."""
    for key, name in (("messages", "messages"), ("conversations", "sharegpt"),
                      ("instruction", "alpaca"), ("prompt", "pairs")):
        if key in obj:
            return name
    return None


def _string(obj, key, where, optional=False):
    value = obj.get(key)
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {key!r} is missing or not a string")
    return value


def _content(message, where):
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "text"
                    and isinstance(part.get("text"), str)):
                raise ValueError(f"{where}: a content part that is not "
                                 "{\"type\": \"text\", \"text\": ...}")
            texts.append(part["text"])
        return "".join(texts)
    raise ValueError(f"{where}: message content is missing or neither a string nor a list of "
                     "text parts")


def _turns(obj, where, field, kind, role_key, roles, content_of):
    """The messages of list `field` of `obj`: each item an object whose `role_key` is a key of
    `roles` (mapped to its role) and whose content content_of(item, where) reads."""
    items = obj.get(field)
    if not isinstance(items, list) or not items:
        raise ValueError(f"{where}: {field!r} is not a non-empty list")
    out = []
    for k, item in enumerate(items):
        at = f"{where}: {kind} {k}"
        if not isinstance(item, dict):
            raise ValueError(f"{at} is not an object")
        if item.get(role_key) not in roles:
            raise ValueError(f"{at}: unknown role {item.get(role_key)!r}"
                             f"{'' if role_key == 'role' else ' in ' + repr(role_key)} "
                             f"(expected one of {', '.join(roles)})")
        out.append({"role": roles[item[role_key]], "content": content_of(item, at)})
    return out


def _messages(obj, where):
    return _turns(obj, where, "messages", "message", "role", {r: r for r in ROLES}, _content)


def _value(turn, where):
    if not isinstance(turn.get("value"), str):
        raise ValueError(f"{where}: 'value' is missing or not a string")
    return turn["value"]


def _system(obj, where):
    """[the system message] of an optional top-level "system" string, else []."""
    system = _string(obj, "system", where, optional=True)
    return [{"role": "system", "content": system}] if system else []


def _alpaca(obj, where):
    instruction = _string(obj, "instruction", where)
    extra = _string(obj, "input", where, optional=True)
    out = _system(obj, where)
    out.append({"role": "user", "content": instruction + ("\n\n" + extra if extra else "")})
    out.append({"role": "assistant", "content": _string(obj, "output", where)})
    return out


def _sharegpt(obj, where):
    return _system(obj, where) + _turns(obj, where, "conversations", "turn", "from",
                                        SHAREGPT_ROLES, _value)


def _pairs(obj, where):
    return [{"role": "user", "content": _string(obj, "prompt", where)},
            {"role": "assistant", "content": _string(obj, "response", where)}]


READERS = {"messages": _messages, "alpaca": _alpaca, "sharegpt": _sharegpt, "pairs": _pairs}


def read_conversations(path, fmt="auto"):
    """(format, [(line number, conversation), ...]) of the JSONL file `path`; blank lines are
    skipped. fmt "auto" takes the format of the first object; every line must hold that
    format. Raises ValueError "PATH:LINE: ..." for a line that is not JSON, not an object, of
    another format, or breaks its format's rules (an unknown role, a missing field, a
    conversation without an assistant turn); OSError / UnicodeDecodeError from reading."""
    conversations = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not JSON ({e.msg})")
            if not isinstance(obj, dict):
                raise ValueError(f"{where}: expected a JSON object")
            found = detect_format(obj)
            if fmt == "auto":
                if found is None:
                    raise ValueError(f"{where}: no 'messages', 'conversations', 'instruction' or "
                                     "'prompt' field: not a chat format prepare_sft knows "
                                     f"({', '.join(FORMATS)})")
                fmt = found
            elif found != fmt:
                raise ValueError(f"{where}: expected the {fmt} format "
                                 f"(found {found or 'no known format'})")
            conversation = READERS[fmt](obj, where)
            if not any(m["role"] == "assistant" for m in conversation):
                raise ValueError(f"{where}: no assistant turn to train on")
            conversations.append((number, conversation))
    return fmt, conversations
