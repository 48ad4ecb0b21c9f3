"""Just enough of ``java.util.regex`` for Kafka's principal mapping rules.

Kafka's ``ssl.principal.mapping.rules`` and ``sasl.kerberos.principal.to.local.rules`` hold
*Java* regular expressions and *Java* replacement strings (``Matcher.replaceAll``).  Python's
``re`` agrees with Java on the constructs rules actually use (classes, groups, greedy, lazy and,
since Python 3.11, possessive quantifiers and atomic groups); :func:`compile_java` rewrites the
constructs whose meaning differs and refuses the ones it cannot express, so a rule never silently
means something else than it means to Kafka.

Rewritten: ``.`` (Java excludes ``\\r``, ``\\u0085``, ``\\u2028``, ``\\u2029`` as well as ``\\n``),
``$`` and ``\\Z`` (end of input or before a final line terminator), ``\\z``, ``(?<name>``,
``\\k<name>``, ``\\Q...\\E``, ``\\h``, ``\\v``, ``\\R``, ``\\e``, ``\\x{h..h}``, ``\\cX``,
``\\0oct`` and ``\\p{..}`` for the POSIX classes (``Lower``, ``Upper``, ``Alpha``, ``Digit``,
``Alnum``, ``Punct``, ``Space``, ...).  Matching is ASCII for ``\\w``, ``\\d``, ``\\s``,
``\\b`` and case-insensitivity, as Java's defaults are.  Java's "Illegal repetition" (a ``{``
that does not start a ``{n}``/``{n,}``/``{n,m}`` quantifier) is a syntax error, as in Java.

Refused with :class:`JavaRegexUnsupported` although Java accepts them (a config using them is
refused, never misread): class intersection and nesting (``[a-z&&[^b]]``, ``[a[b]]``), ``\\G``,
Unicode ``\\p{..}`` classes, and inline flags other than ``i`` (``(?s)``, ``(?m)``, ``(?x)``,
``(?u)``, ``(?d)``...).  Known residual differences: Java's ``\\b`` in JDK 17 uses Unicode
letters and digits while ours is ASCII; ``(?i)`` must lead the pattern (Python 3.11 refuses
it mid-pattern); syntax-error *messages* are Python's, not Java's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from store.errors import InvalidConfigError

# Java's line terminators (java.util.regex.Pattern, "Line terminators").
_NOT_LINE_TERMINATOR = "[^\\n\\r\\u0085\\u2028\\u2029]"
# Java's non-MULTILINE ``$``: end of input, or before a final terminator (``\r\n`` counts as one).
JAVA_DOLLAR = "(?=(?:\\r\\n|(?<!\\r)\\n|[\\r\\u0085\\u2028\\u2029])?\\Z)"

_POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
_HORIZONTAL_SPACE = " \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000"
_VERTICAL_SPACE = "\\n\\x0b\\f\\r\\x85\\u2028\\u2029"
_QUANTIFIER_BRACE = re.compile(r"\{\d+(,\d*)?\}")


class JavaRegexError(InvalidConfigError):
    """A rule's pattern or replacement that ``java.util.regex`` rejects (``PatternSyntaxException``,
    ``IllegalArgumentException`` or ``IndexOutOfBoundsException`` in Kafka)."""

    kafka_exception = "IllegalArgumentException"


class JavaPatternSyntaxError(JavaRegexError):
    """``Pattern.compile`` refuses the pattern (``PatternSyntaxException``); messages differ."""

    kafka_exception = "PatternSyntaxException"


class JavaRegexUnsupported(JavaRegexError):
    """A valid Java construct with no faithful Python equivalent: rewrite the rule without it."""


class NoSuchGroupError(JavaRegexError):
    """A ``$n`` replacement reference to a group the pattern does not have."""

    kafka_exception = "IndexOutOfBoundsException"


# The Java supertypes a conformance vector may name for the exceptions Kafka lets through.
_JAVA_SUPERTYPES = {
    "PatternSyntaxException": ("IllegalArgumentException", "RuntimeException"),
    "NumberFormatException": ("IllegalArgumentException", "RuntimeException"),
    "IllegalArgumentException": ("RuntimeException",),
    "IndexOutOfBoundsException": ("RuntimeException",),
    "NoMatchingRule": ("IOException",),
    "BadFormatString": ("IOException",),
}


def java_exception_is(error: BaseException, name: str) -> bool:
    """Whether ``error`` stands for the Java exception ``name`` (or one of its subclasses)."""
    own = getattr(error, "kafka_exception", None)
    if not isinstance(own, str):
        return False
    return own == name or name in _JAVA_SUPERTYPES.get(own, ())


@dataclass(frozen=True, slots=True)
class JavaPattern:
    """A compiled Java pattern: ``source`` is Java's ``Pattern.toString()``."""

    source: str
    compiled: re.Pattern[str]

    @property
    def group_count(self) -> int:
        return self.compiled.groups

    def matches(self, text: str) -> bool:
        """``Matcher.matches()``: the whole input must match."""
        return self.compiled.fullmatch(text) is not None

    def looking_at(self, text: str) -> re.Match[str] | None:
        """``Matcher.lookingAt()``: a match anchored at the start, not necessarily to the end."""
        return self.compiled.match(text)

    def find_all(self, text: str) -> list[re.Match[str]]:
        """The successive ``Matcher.find()`` results.

        Java resumes after a match at its end, but after an *empty* match one character later;
        Python's ``finditer`` would allow a non-empty match at the same place, so loop by hand.
        """
        found: list[re.Match[str]] = []
        pos = 0
        while pos <= len(text):
            match = self.compiled.search(text, pos)
            if match is None:
                break
            found.append(match)
            pos = match.end() + 1 if match.end() == match.start() else match.end()
        return found

    def replace_all(self, text: str, replacement: str) -> str:
        """``Matcher.replaceAll(replacement)`` with Java's ``$n`` / ``${name}`` / ``\\x`` syntax."""
        return self._replace(text, replacement, self.find_all(text))

    def replace_first(self, text: str, replacement: str) -> str:
        """``Matcher.replaceFirst(replacement)``."""
        match = self.compiled.search(text)
        return self._replace(text, replacement, [] if match is None else [match])

    def _replace(self, text: str, replacement: str, found: list[re.Match[str]]) -> str:
        out: list[str] = []
        tail = 0
        for match in found:
            out.append(text[tail : match.start()])
            out.append(expand_replacement(match, replacement))
            tail = match.end()
        out.append(text[tail:])
        return "".join(out)


def expand_replacement(match: re.Match[str], replacement: str) -> str:
    """Java's ``Matcher.appendReplacement`` expansion of one replacement string.

    ``\\x`` is a literal ``x``; ``$n`` takes the first digit always and further digits while
    the number stays a valid group; ``${name}`` names a group.  A group that did not take part
    in the match contributes nothing.
    """
    group_count = match.re.groups
    out: list[str] = []
    cursor = 0
    while cursor < len(replacement):
        char = replacement[cursor]
        if char == "\\":
            cursor += 1
            if cursor == len(replacement):
                raise JavaRegexError("character to be escaped is missing")
            out.append(replacement[cursor])
            cursor += 1
            continue
        if char != "$":
            out.append(char)
            cursor += 1
            continue
        cursor += 1
        if cursor == len(replacement):
            raise JavaRegexError("Illegal group reference: group index is missing")
        group: int | str
        if replacement[cursor] == "{":
            end = cursor + 1
            while end < len(replacement) and replacement[end].isascii() and replacement[end].isalnum():
                end += 1
            name = replacement[cursor + 1 : end]
            if not name:
                raise JavaRegexError("named capturing group has 0 length name")
            if end == len(replacement) or replacement[end] != "}":
                raise JavaRegexError("named capturing group is missing trailing '}'")
            if name[0].isdigit():
                raise JavaRegexError(f"capturing group name {{{name}}} starts with digit character")
            if name not in match.re.groupindex:
                raise JavaRegexError(f"No group with name {{{name}}}")
            group = name
            cursor = end + 1
        else:
            digit = replacement[cursor]
            if not ("0" <= digit <= "9"):
                raise JavaRegexError("Illegal group reference")
            number = int(digit)
            cursor += 1
            while cursor < len(replacement) and "0" <= replacement[cursor] <= "9":
                longer = number * 10 + int(replacement[cursor])
                if longer > group_count:
                    break
                number = longer
                cursor += 1
            if number > group_count:
                raise NoSuchGroupError(f"No group {number}")
            group = number
        value = match.group(group)
        if value is not None:
            out.append(value)
    return "".join(out)


def compile_java(source: str) -> JavaPattern:
    """``Pattern.compile(source)``: translate to Python ``re`` and compile, or raise."""
    translated = _translate(source)
    try:
        compiled = re.compile(translated, re.ASCII)
    except re.error as exc:
        raise JavaPatternSyntaxError(f"{exc} in regular expression {source!r}") from exc
    return JavaPattern(source=source, compiled=compiled)


def _translate(source: str) -> str:
    out: list[str] = []
    i = 0
    n = len(source)
    in_class = False
    while i < n:
        char = source[i]
        if char == "\\":
            piece, i = _escape(source, i, in_class)
            out.append(piece)
            continue
        if in_class:
            if char == "[":
                raise JavaRegexUnsupported(
                    f"nested character classes are not supported in {source!r}; use one class"
                )
            if char == "&" and source.startswith("&&", i):
                raise JavaRegexUnsupported(
                    f"class intersection (&&) is not supported in {source!r}; list the characters"
                )
            if char == "]" and not _class_just_opened(out):
                in_class = False
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            out.append(char)
            i += 1
            if source.startswith("^", i):
                out.append("^")
                i += 1
            if source.startswith("]", i):  # a leading ']' is literal in Python, not in Java
                raise JavaPatternSyntaxError(f"Unclosed character class near index {i} in {source!r}")
            continue
        if char == ".":
            out.append(_NOT_LINE_TERMINATOR)
        elif char == "$":
            out.append(JAVA_DOLLAR)
        elif char == "{":
            brace = _QUANTIFIER_BRACE.match(source, i)
            if brace is None or i == 0:
                raise JavaPatternSyntaxError(f"Illegal repetition near index {i} in {source!r}")
            out.append(brace.group(0))
            i = brace.end()
            continue
        elif char == "(" and source.startswith("(?", i):
            piece, i = _group_opening(source, i)
            out.append(piece)
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _class_just_opened(out: list[str]) -> bool:
    return bool(out) and (out[-1] == "[" or (out[-1] == "^" and len(out) > 1 and out[-2] == "["))


def _group_opening(source: str, i: int) -> tuple[str, int]:
    if source.startswith("(?<", i) and not source.startswith(("(?<=", "(?<!"), i):
        end = source.find(">", i)
        if end < 0:
            raise JavaRegexError(f"named capturing group is missing trailing '>' in {source!r}")
        return "(?P<" + source[i + 3 : end] + ">", end + 1
    flags = re.match(r"\(\?([a-zA-Z-]*)([:)])", source[i:])
    if flags and flags.group(1):
        if set(flags.group(1)) - {"i"}:
            raise JavaRegexUnsupported(
                f"inline flags ({flags.group(1)}) are not supported in {source!r}; "
                "only (?i) is translated"
            )
        return flags.group(0), i + flags.end()
    return "(?", i + 2


def _escape(source: str, i: int, in_class: bool) -> tuple[str, int]:
    if i + 1 >= len(source):
        raise JavaRegexError(f"Unexpected internal error near index {i + 1} in {source!r}")
    code = source[i + 1]
    nxt = i + 2
    if code == "Q":
        end = source.find("\\E", nxt)
        literal = source[nxt:] if end < 0 else source[nxt:end]
        return re.escape(literal), len(source) if end < 0 else end + 2
    if code == "E":
        return "", nxt  # a stray \E is ignored by Java
    if code in "pP":
        return _property(source, i, in_class)
    simple = {
        "h": f"[{_HORIZONTAL_SPACE}]",
        "H": f"[^{_HORIZONTAL_SPACE}]",
        "v": f"[{_VERTICAL_SPACE}]",
        "V": f"[^{_VERTICAL_SPACE}]",
        "e": "\\x1b",
        "z": "\\Z",
        "Z": JAVA_DOLLAR,
        "R": "(?>\\r\\n|[\\n\\x0b\\f\\r\\x85\\u2028\\u2029])",
    }
    if code in simple:
        if in_class and code in "hHvV":
            return simple[code][1:-1] if code in "hv" else _refuse_in_class(source, code), nxt
        if in_class and code in "zZR":
            raise JavaRegexError(f"Illegal/unsupported escape sequence \\{code} in {source!r}")
        return simple[code], nxt
    if code == "G":
        raise JavaRegexUnsupported(f"\\G is not supported in {source!r}")
    if code == "k" and source.startswith("<", nxt):
        end = source.find(">", nxt)
        if end < 0:
            raise JavaRegexError(f"named capturing group is missing trailing '>' in {source!r}")
        return "(?P=" + source[nxt + 1 : end] + ")", end + 1
    if code == "x" and source.startswith("{", nxt):
        end = source.find("}", nxt)
        if end < 0:
            raise JavaRegexError(f"Unclosed hexadecimal escape sequence in {source!r}")
        try:
            return re.escape(chr(int(source[nxt + 1 : end], 16))), end + 1
        except ValueError as exc:
            raise JavaRegexError(f"Illegal hexadecimal escape sequence in {source!r}") from exc
    if code == "c":
        if nxt >= len(source):
            raise JavaRegexError(f"Illegal control escape sequence in {source!r}")
        return re.escape(chr(ord(source[nxt]) ^ 64)), nxt + 1
    if code == "0":
        digits = re.match(r"[0-3]?[0-7]{1,2}", source[nxt:]) or re.match(r"[0-7]", source[nxt:])
        if digits is None:
            raise JavaRegexError(f"Illegal octal escape sequence in {source!r}")
        return re.escape(chr(int(digits.group(0), 8))), nxt + digits.end()
    return source[i:nxt], nxt


def _refuse_in_class(source: str, code: str) -> str:
    raise JavaRegexUnsupported(f"\\{code} inside a character class is not supported in {source!r}")


def _property(source: str, i: int, in_class: bool) -> tuple[str, int]:
    negate = source[i + 1] == "P"
    nxt = i + 2
    if source.startswith("{", nxt):
        end = source.find("}", nxt)
        if end < 0:
            raise JavaRegexError(f"Unclosed character family in {source!r}")
        name, after = source[nxt + 1 : end], end + 1
    else:
        name, after = source[nxt : nxt + 1], nxt + 1
    key = name[2:] if name.startswith("Is") and name[2:] in _POSIX_CLASSES else name
    body = _POSIX_CLASSES.get(key)
    if body is None:
        raise JavaRegexUnsupported(
            f"the character property \\p{{{name}}} is not supported in {source!r}; "
            "use an explicit class"
        )
    if in_class:
        if negate:
            raise JavaRegexUnsupported(f"\\P{{{name}}} inside a class is not supported in {source!r}")
        return body, after
    return ("[^" if negate else "[") + body + "]", after
