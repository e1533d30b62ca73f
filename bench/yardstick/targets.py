"""Reads support/targets.def, the one table of target facts, as text.

Every row is `TARGET(id, .field = value, ...)` or `GPU(id, .field = value, ...)`, one
`.field = value` per argument with plain literals (ints, floats, "strings", true/false), possibly
spread over several lines. Returns {id: {field: value}} per kind; raises ValueError on a row it
cannot read, so a change of the table's form fails loudly instead of feeding the model zeros.
"""
import os
import re

DEF_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "support", "targets.def")

_ROW = re.compile(r"^(TARGET|GPU)\(", re.M)


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _value(raw):
    raw = raw.strip()
    if raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1]
    if raw in ("true", "false"):
        return raw == "true"
    try:
        return int(raw)
    except ValueError:
        return float(raw)


def parse(text):
    """{'TARGET': {id: {field: value}}, 'GPU': {...}} from the text of a targets.def."""
    text = _strip_comments(text)
    rows = {"TARGET": {}, "GPU": {}}
    for m in _ROW.finditer(text):
        kind, i, depth = m.group(1), m.end(), 1
        j = i
        while depth:
            if j >= len(text):
                raise ValueError("targets.def: unterminated %s row" % kind)
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        body = text[i:j - 1]
        if body.strip().startswith("id,") or body.strip() == "id, ...":
            continue  # the #define placeholders
        args = [a.strip() for a in body.split(",")]
        ident, fields = args[0], {}
        for a in args[1:]:
            if not a:
                continue
            fm = re.match(r"^\.(\w+)\s*=\s*(.+)$", a, re.S)
            if not fm:
                raise ValueError("targets.def: %s(%s): cannot read '%s'" % (kind, ident, a))
            fields[fm.group(1)] = _value(fm.group(2))
        rows[kind][ident] = fields
    if not rows["TARGET"]:
        raise ValueError("targets.def: no TARGET rows")
    return rows


def load(path=DEF_PATH):
    with open(path) as f:
        return parse(f.read())
