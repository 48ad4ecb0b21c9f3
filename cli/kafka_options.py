"""Command lines read the way Kafka's tools read them (joptsimple's syntax).

Kafka's command-line tools (``kafka-acls.sh``: ``org.apache.kafka.tools.AclCommand``) parse
their options with joptsimple 5's ``OptionParser``, abbreviations off (Kafka's
``CommandDefaultOptions``).  Its rules are not argparse's, and scripts rely on them:

* ``-list`` is ``--list``: a word with one dash whose name (up to a ``=``) is an option is that
  option; any other one-dash word is a cluster of one-letter options (``-l``, ``-h``), and the
  first letter that is no option is refused (``l is not a recognized option``);
* ``--name=value`` and ``-name=value`` give a value; an option that takes none ignores it
  (``--list=yes`` is ``--list``);
* an option that needs a value takes the next word whatever it is (``--topic -dash-billing``,
  ``--topic --``), and says ``Option topic requires an argument`` only when there is none;
* an option that may take one (``--principal``) takes the next word unless it starts with ``-``
  (a lone ``-`` is a value);
* ``--`` ends the options; every word after it, like every word no option takes, is a non-option
  argument, which Kafka's tools ignore;
* no abbreviations: ``--top`` is no option, nor is ``--Topic``.

:func:`read_options` applies these rules.  argparse reads such words otherwise (it refuses
``--topic -dash``, reads ``--`` its own way and drops a value ``--``, even after ``=``), so a
command read this way (``aclstore acls``) gives argparse none of its words:
:class:`cli.common.Parser` applies the options found to its argparse actions, argparse
keeping the defaults, the usage and the check of each value.  Pure logic, no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from store.errors import InvalidRequestError


class Arity(enum.Enum):
    """Whether an option takes a value: joptsimple's ``NoArgumentOptionSpec``,
    ``RequiredArgumentOptionSpec``, ``OptionalArgumentOptionSpec``."""

    NONE = "none"
    REQUIRED = "required"
    OPTIONAL = "optional"


class KafkaOptionError(InvalidRequestError):
    """A command line joptsimple refuses (its ``OptionException``); the message is joptsimple's."""


OPTIONS_END = "--"


def _looks_like_option(word: str) -> bool:
    """joptsimple's ``looksLikeAnOption``: a short or long option token, ``--`` included."""
    return word.startswith("-") and word != "-"


def read_options(words: Sequence[str], arities: Mapping[str, Arity]) -> list[tuple[str, str | None]]:
    """The options of ``words`` as joptsimple reads them: each option's name and its value (None
    for none, and for an option that takes none whatever ``=`` gave it), in order.

    ``arities`` names every option (without dashes).  Non-option words, and everything after
    ``--``, are left out: Kafka's tools ignore them.  A word joptsimple refuses raises
    :class:`KafkaOptionError` with joptsimple's message, the first one it would meet.
    """
    options: list[tuple[str, str | None]] = []
    rest = list(reversed(words))  # rest.pop() is the next word

    def take(name: str, value: str | None) -> None:
        arity = arities[name]
        if value is None and arity is Arity.REQUIRED:
            if not rest:
                raise KafkaOptionError(f"Option {name} requires an argument")
            value = rest.pop()
        elif value is None and arity is Arity.OPTIONAL and rest and not _looks_like_option(rest[-1]):
            value = rest.pop()
        options.append((name, None if arity is Arity.NONE else value))

    while rest:
        word = rest.pop()
        if word == OPTIONS_END:
            break
        if not _looks_like_option(word):
            continue
        long = word.startswith("--")
        name, equals, value = word[2 if long else 1 :].partition("=")
        if name in arities:
            take(name, value if equals else None)
        elif long:
            raise KafkaOptionError(f"{name} is not a recognized option")
        else:
            for letter, letter_value in _short_cluster(word[1:], arities):
                take(letter, letter_value)
    return options


def _short_cluster(letters: str, arities: Mapping[str, Arity]) -> list[tuple[str, str | None]]:
    """joptsimple's ``handleShortOptionCluster``: ``-abc`` is ``-a -b -c``; each letter must be an
    option, up to the first that takes a value, which takes the letters after it, if any."""
    for letter in letters:
        if letter not in arities:
            raise KafkaOptionError(f"{letter} is not a recognized option")
        if arities[letter] is not Arity.NONE:
            break
    options: list[tuple[str, str | None]] = []
    for i, letter in enumerate(letters):
        if arities[letter] is not Arity.NONE and i + 1 < len(letters):
            return [*options, (letter, letters[i + 1 :])]
        options.append((letter, None))
    return options
