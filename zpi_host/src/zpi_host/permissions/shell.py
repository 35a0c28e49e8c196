"""What a bash command line runs, as far as its text shows: every simple command anywhere in
it, seen through quoting, wrappers and ``sh -c`` strings, and what cannot be seen through.

The line is parsed with tree-sitter's bash grammar (imported on first use: only lines that a
bash rule is checked against pay for it). Every ``command`` node of the tree counts, wherever it
sits: lists, pipelines, subshells, groups, ``if``/``for``/``while``/``case`` bodies and
conditions, function bodies, command and process substitutions, here-documents. Each word is
unquoted the way bash does it; a word whose value depends on the run (a variable, a
substitution, a glob or brace expansion) is ``None``. :mod:`.wrappers` then sees through
``env``, ``timeout``, ``xargs``, ``sudo``, shells' ``-c`` strings and their kind.

What cannot be seen through is recorded as ``unknown`` with the reason: a parse error, a
program name that is not literal, ``eval`` of a variable, a shell reading its commands from
standard input, nesting deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import attrs

from .invocations import Invocation, ShellLine, Word
from .wrappers import unwrap

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

#: How deep ``sh -c``, ``eval`` and ``trap`` strings are parsed inside one another.
MAX_DEPTH = 6


class Glob(str):
    """A word with unquoted ``*``, ``?``, ``[`` or a brace expansion: bash may turn it into
    other words (``/bin/r?`` runs ``/bin/rm``). As an argument it is matched as written; as a
    program name it is unknown."""


#: Lines up to this many characters are kept in a cache (a line is often checked against
#: several rules); longer ones, such as here-documents that write a file, are read each time.
CACHED_LENGTH = 16_384


def parse_line(text: str, depth: int = 0) -> ShellLine:
    """What the bash command line ``text`` runs."""
    if len(text) <= CACHED_LENGTH:
        return _parse_cached(text, depth)
    return _parse(text, depth)


@lru_cache(maxsize=256)
def _parse_cached(text: str, depth: int) -> ShellLine:
    return _parse(text, depth)


def _parse(text: str, depth: int) -> ShellLine:
    if depth > MAX_DEPTH:
        return ShellLine((), f"shell code nested more than {MAX_DEPTH} levels deep")
    if "\x00" in text:
        return ShellLine((), "the command contains a NUL character")
    try:
        source = text.encode("utf-8")
    except UnicodeEncodeError:
        return ShellLine((), "the command is not valid Unicode text")
    tree = _parser().parse(source.translate(_ASCII_ONLY))
    if tree.root_node.has_error:
        return ShellLine((), "bash syntax the rules cannot read")
    try:
        return attrs.evolve(_Reader(source, depth).line(tree.root_node), source=text)
    except RecursionError:
        return ShellLine((), "the command is nested too deeply to read")


#: Every byte of a non-ASCII character becomes ``a`` for the grammar (values are still read
#: from the real text at the same offsets). Bash syntax is all ASCII, so nothing is lost, and
#: the grammar's scanner never sees the multi-byte characters that can crash it
#: (tree-sitter-bash issue 337: ``{`` followed by a 4-byte UTF-8 character, SIGSEGV on Linux).
_ASCII_ONLY = bytes(range(128)) + b"a" * 128


_parsers = threading.local()


def _parser() -> Parser:
    """This thread's bash parser (a parser is not shared between threads), built on first
    use: tree-sitter is imported here, not before."""
    parser: Parser | None = getattr(_parsers, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        _parsers.parser = parser
    return parser


#: Nodes whose value may be a quoted string with code in it.
_LITERALS = ("word", "raw_string", "string", "ansi_c_string", "concatenation")
#: Builtins the grammar gives node types of their own; they count as commands too.
_DECLARATIONS = ("declaration_command", "unset_command")


class _Reader:
    """Turns a tree-sitter tree into a :class:`ShellLine`."""

    def __init__(self, source: bytes, depth: int) -> None:
        self.source, self.depth = source, depth
        #: Words the grammar put into a redirection that are a command's arguments in bash
        #: (``git >/dev/null push``), each as the nodes that form it, by the id of the
        #: command they belong to.
        self.trailing: dict[int, list[list[Node]]] = {}
        #: Quoted words with ``$(`` or a backquote, in order (a dict as an ordered set).
        self.code_strings: dict[str, None] = {}

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def line(self, root: Node) -> ShellLine:
        invocations: list[Invocation] = []
        unknown: str | None = None
        stack = [root]
        while stack:
            node = stack.pop()
            kind = node.type
            if kind == "command":
                assignments, words, problem = self.command_parts(node)
                if problem is not None:
                    unknown = unknown or problem
                if words:
                    invocations.append(unwrap(words, self.depth, assignments,
                                                  parse=parse_line))
            elif kind == "redirected_statement":
                unknown = unknown or self.note_trailing_words(node)
            elif kind == "simple_expansion" and any(c.isspace() for c in self.text(node)):
                unknown = unknown or "bash syntax the grammar misreads ('$' before a space)"
            elif kind == "variable_assignment":
                self.assignment(node)  # notes a quoted value with code in it
                value = node.child_by_field_name("value")
                operator_end = node.children[1].end_byte if node.child_count > 1 else -1
                if value is not None and value.start_byte != operator_end:
                    unknown = unknown or "an assignment the grammar misreads ('=' before a " \
                                         "space)"
            elif kind in _LITERALS:
                self.value(node)  # likewise, for words outside commands (for, case, [[ ]])
            elif kind in _DECLARATIONS:
                invocations.append(unwrap(self.declaration_words(node), self.depth,
                                                  parse=parse_line))
            elif kind == "command_substitution" and self.text(node).startswith("`") \
                    and "\\`" in self.text(node):
                unknown = unknown or "backquotes nested inside backquotes"
            elif kind == "comment" and self.glued_comment(node):
                unknown = unknown or "a '#' that bash reads as part of a word, not a comment"
            elif kind == "heredoc_redirect" and self.unread_heredoc(node):
                unknown = unknown or "a here-document runs code the grammar did not read"
            stack.extend(reversed(node.children))
        scripts = {inv.script.source for inv in invocations if inv.script is not None}
        quoted = [self.quoted_code(text) for text in self.code_strings if text not in scripts]
        return ShellLine(tuple(invocations), unknown, tuple(q for q in quoted if q is not None))

    def quoted_code(self, text: str) -> ShellLine | None:
        """The commands of the substitutions in a quoted string, read as if the string were
        in double quotes; None when there are none. When the string does not parse, it is
        unknown if it holds a complete ``$(...)`` or backquote pair (arithmetic runs the
        subscript before it meets the error), else just text (``grep -n '$(' src``)."""
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        probe = parse_line(f': "{escaped}"', self.depth + 1)
        if probe.unknown is not None:
            if _COMPLETE_SUBSTITUTION.search(text):
                return ShellLine((), "a quoted string with code the grammar cannot read")
            return None
        if len(probe.invocations) < 2:
            return None
        return ShellLine(probe.invocations[1:], None, probe.quoted_code)

    def glued_comment(self, node: Node) -> bool:
        """Whether a "comment" follows a word with only backslash-newlines between them:
        bash then joins them into one word (``a=1\\<newline>#x rm f`` runs ``rm f``)."""
        start = node.start_byte
        while start >= 2 and self.source[start - 2:start] == b"\\\n":
            start -= 2
        return 0 < start < node.start_byte and self.source[start - 1:start] not in _WORD_ENDS

    def unread_heredoc(self, node: Node) -> bool:
        """Whether a here-document with an unquoted delimiter has backquotes or ``$(`` the
        grammar left as text: bash runs them, and the grammar reads only some (``$(...)``
        after ``<<``, neither after ``<<-``)."""
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        if start is None or any(q in self.text(start) for q in "'\"\\"):
            return False
        for body in (c for c in node.children if c.type == "heredoc_body"):
            position = body.start_byte
            for child in body.children:
                if _runs_code(self.source[position:child.start_byte]):
                    return True
                position = child.end_byte
            if _runs_code(self.source[position:body.end_byte]):
                return True
        return False

    def note_trailing_words(self, node: Node) -> str | None:
        """Remember the words after a redirection's target (the grammar reads ``>f a b`` as
        three targets, bash as the target ``f`` and arguments ``a b``) for the statement's
        command; a reason when they follow something other than a simple command."""
        groups: list[list[Node]] = []
        for redirect in node.children_by_field_name("redirect"):
            found = [c for i, c in enumerate(redirect.children)
                     if redirect.field_name_for_child(i) in ("destination", "argument")]
            if redirect.type == "file_redirect" and found:
                target, found = found[0], found[1:]
                previous_end, glued_to_target = target.end_byte, True
            else:
                previous_end, glued_to_target = -1, False
            for word in found:
                touching = self.touching(previous_end, word.start_byte)
                if touching and glued_to_target:
                    pass  # >x\<newline>y: still the target
                elif touching and groups:
                    groups[-1].append(word)
                else:
                    groups.append([word])
                glued_to_target = touching and glued_to_target
                previous_end = word.end_byte
        if not groups:
            return None
        body = node.child_by_field_name("body")
        if body is None or body.type != "command":
            return "words after a redirection of a compound command"
        self.trailing[body.id] = groups
        return None

    def touching(self, end: int, start: int) -> bool:
        """Whether two nodes form one word: nothing but backslash-newlines between them."""
        return end >= 0 and not self.source[end:start].replace(b"\\\n", b"")

    def command_parts(self, node: Node) -> tuple[tuple[Word, ...], list[Word], str | None]:
        """The ``NAME=value`` words, then the program and arguments of a ``command`` node
        (redirections left out), and a reason if the grammar split words where bash does
        not. Nodes that touch with no space between them form one word, as in bash
        (``a=$''x rm`` assigns ``x`` and runs ``rm``; the grammar reads ``x`` as the program)."""
        items: list[list[Any]] = []  # [is an assignment, value]
        problem: str | None = None
        previous_end, previous_is_word = -1, False
        for i, child in enumerate(node.children):
            if child.type == "variable_assignment":
                value, is_assignment = self.assignment(child), True
            elif child.type == "command_name" or node.field_name_for_child(i) == "argument":
                value, is_assignment = self.value(child), False
            else:  # a redirection
                previous_end, previous_is_word = child.end_byte, False
                continue
            touching = self.touching(previous_end, child.start_byte)  # r\<newline>m: rm
            if previous_end >= 0 and b"\n" in self.source[previous_end:child.start_byte] \
                    .replace(b"\\\n", b""):
                problem = "lines the grammar joined into one command"
            if touching and previous_is_word:
                before = items[-1]
                if before[1] == "$" and child.type == "string":  # $"..." read as two nodes
                    before[1] = value
                else:
                    before[1] = _join([before[1], value])
            else:
                if touching:
                    problem = "words the grammar split where bash does not"
                items.append([is_assignment, value])
            previous_end, previous_is_word = child.end_byte, True
        items += [[False, _join([self.value(n) for n in group])]
                  for group in self.trailing.get(node.id, ())]
        count = 0  # leading assignments; a\<newline>x=1 is one too, glued by bash
        while count < len(items) and (items[count][0] or (
                isinstance(items[count][1], str) and _ASSIGNMENT_WORD.match(items[count][1]))):
            count += 1
        words: list[Word] = [value for _, value in items[count:]]
        if words and isinstance(words[0], Glob):
            words[0] = None
        return tuple(value for _, value in items[:count]), words, problem

    def assignment(self, node: Node) -> Word:
        """``NAME=value`` or ``NAME+=value`` with the value unquoted; None if it is dynamic."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None:
            return None
        operator = self.source[name.end_byte:node.end_byte if value is None
                               else value.start_byte].decode("utf-8", "replace")
        rest = "" if value is None else self.value(value)
        return None if rest is None else self.text(name) + operator + rest

    def declaration_words(self, node: Node) -> list[Word]:
        """``export A=1 B`` as the words ``export``, ``A=1``, ``B``."""
        words: list[Word] = []
        for child in node.children:
            if child.type == "variable_assignment":
                words.append(self.assignment(child))
            elif child.type != "comment":
                words.append(self.value(child) if child.is_named else self.text(child))
        return words

    def value(self, node: Node) -> Word:
        """A word node's value as bash passes it, a :class:`Glob`, or None. Values with
        ``$(`` or a backquote are noted in :attr:`code_strings`."""
        value = self.word_value(node)
        if value is not None and ("$(" in value or "`" in value):
            self.code_strings[value] = None
        return value

    def word_value(self, node: Node) -> Word:
        kind = node.type
        if kind == "command_name":
            return _join([self.value(c) for c in node.children])
        if kind == "word":
            return _unescape_word(self.text(node))
        if kind in ("number", "variable_name", "file_descriptor", "$"):
            return self.text(node)
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "string":
            if all(c.type in ('"', "string_content") for c in node.children):
                return _unescape_double(self.text(node)[1:-1])
            return None
        if kind == "ansi_c_string":
            return decode_ansi_c(self.text(node)[2:-1])
        if kind == "translated_string":
            inner = [c for c in node.children if c.type == "string"]
            return self.value(inner[0]) if inner else None
        if kind == "concatenation":
            parts: list[Word] = []
            children = node.children
            for i, child in enumerate(children):
                if child.type == "$" and i + 1 < len(children) \
                        and children[i + 1].type == "string":
                    continue  # $"..." inside a word: a translated string
                parts.append(self.text(child) if child.type == "$" else self.value(child))
            return _join(parts)
        return None


_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_WORD_ENDS = (b" ", b"\t", b"\n", b";", b"&", b"|", b"(", b")", b"<", b">")
_COMPLETE_SUBSTITUTION = re.compile(r"\$\([^()]*\)|`[^`]*`")


def _runs_code(text: bytes) -> bool:
    return b"`" in text or b"$(" in text


def _join(parts: list[Any]) -> Word:
    if any(p is None for p in parts):
        return None
    joined = "".join(parts)
    return Glob(joined) if any(isinstance(p, Glob) for p in parts) else joined


_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")


def _unescape_word(text: str) -> Word:
    """An unquoted word: ``\\x`` is ``x``, a backslash-newline disappears. Unescaped glob
    characters or a brace expansion make it a :class:`Glob`."""
    out: list[str] = []
    plain: list[str] = []  # the unescaped characters only, to look for globs and braces
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
                plain.append("_")
            i += 2
            continue
        out.append(c)
        plain.append(c)
        i += 1
    value = "".join(out)
    bare = "".join(plain)
    if any(c in bare for c in "*?[") or _BRACES.search(bare):
        return Glob(value)
    return value


def _unescape_double(text: str) -> str:
    """The inside of ``"..."``: a backslash escapes only ``$``, a backquote, ``"``, ``\\``
    and a newline (which then disappears)."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_NUMBER = re.compile(r"[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}")


def decode_ansi_c(body: str) -> Word:
    """The value of ``$'body'`` as bash computes it; None for forms it cannot be sure of."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
            continue
        if nxt == "c":
            if i + 2 >= len(body):
                return None
            out.append(chr(ord(body[i + 2].upper()) ^ 0x40) if body[i + 2] != "?" else "\x7f")
            i += 3
            continue
        number = _ANSI_NUMBER.match(body, i + 1)
        if number is None:
            out.append(body[i:i + 2])  # an unknown escape stays as written
            i += 2
            continue
        digits = number.group()
        code = int(digits, 8) if digits[0] in "01234567" else int(digits[1:], 16)
        if digits[0] in "01234567":
            code &= 0xFF
        if code == 0:
            break  # bash ends the string at a NUL
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF or (digits[0] in "01234567x"
                                                         and code > 0x7F):
            return None  # a byte that is not a character by itself, or no character at all
        out.append(chr(code))
        i = number.end()
    return "".join(out)
