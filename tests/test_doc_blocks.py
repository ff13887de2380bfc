"""Every code block of README.md and docs/ runs as written (issue 16).

The blocks are found by glob (README.md, docs/*.rst, docs/*.md), so a new page is covered without editing this
file. Per document, in order:

- ``python`` blocks are executed, doctest-style: the blocks of one document share one namespace (a later block
  may use what an earlier one defined, as a reader pasting them one after another would) and run in a
  temporary working directory of that document (blocks that create ``state.lmdb`` leave nothing behind).
  A block whose first line is ``>>>`` runs through :mod:`doctest`, its outputs compared.
- ``sh`` / ``bash`` / ``shell`` / ``console`` blocks are not executed (they install packages or run for
  minutes) but checked: every ``make TARGET`` is a target of the Makefile, every ``pip install ".[extra]"``
  names an extra of pyproject.toml, every ``python -m MODULE`` is importable, ``python -m mpt.bench`` and
  ``python -m mpt`` arguments parse, and every script run with ``python FILE`` / ``bash FILE`` or passed as
  ``--config FILE`` exists.

A block that cannot run here (it needs a network, a node's JSON-RPC answer, minutes of runtime) is marked just
before its opening line, with the reason, which the skip shows: ``.. not-runnable: REASON`` (an rst comment)
or ``<!-- not-runnable: REASON -->`` (Markdown). Keep such exceptions few.
"""
from __future__ import annotations

import argparse
import doctest
import importlib.util
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.rst"), *(ROOT / "docs").glob("*.md")])

PYTHON_LANGS = {"python", "py", "python3", "pycon"}
SHELL_LANGS = {"sh", "bash", "shell", "console", "shell-session"}
SKIP_MARK = re.compile(r"^(?:\.\.\s+not-runnable:\s*(.+?)|<!--\s*not-runnable:\s*(.+?)\s*-->)\s*$")


@dataclass
class Block:
    path: Path
    line: int               # 1-based line of the first code line in the document
    lang: str
    code: str
    skip: Optional[str]     # the not-runnable reason, if marked

    @property
    def where(self) -> str:
        return "%s:%d" % (self.path.relative_to(ROOT), self.line)


def _skip_reason(lines: List[str], i: int) -> Optional[str]:
    """The not-runnable mark on the last non-blank line before line i, if any."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j >= 0:
        m = SKIP_MARK.match(lines[j].strip())
        if m:
            return m.group(1) or m.group(2)
    return None


def markdown_blocks(path: Path) -> List[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[indent:] if not line[:indent].strip() else line.lstrip())
            i += 1
        blocks.append(Block(path, start + 1, lang, "\n".join(body) + "\n", _skip_reason(lines, start - 1)))
        i += 1
    return blocks


def rst_blocks(path: Path) -> List[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)\.\.\s+(?:code-block|code|sourcecode)::\s*([\w+-]*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        base, lang, directive = len(m.group(1)), m.group(2).lower(), i
        i += 1
        while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):     # directive options
            i += 1
        body: List[str] = []
        first = None
        while i < len(lines):
            line = lines[i]
            if line.strip() and len(line) - len(line.lstrip()) <= base:
                break
            if line.strip() and first is None:
                first = i
            body.append(line)
            i += 1
        if first is None:
            continue
        content = body[first - (i - len(body)):]
        while content and not content[-1].strip():
            content.pop()
        width = min(len(x) - len(x.lstrip()) for x in content if x.strip())
        code = "\n".join(x[width:] for x in content) + "\n"
        blocks.append(Block(path, first + 1, lang, code, _skip_reason(lines, directive)))
    return blocks


def document_blocks(path: Path) -> List[Block]:
    return markdown_blocks(path) if path.suffix == ".md" else rst_blocks(path)


ALL_BLOCKS = [b for path in DOCUMENTS for b in document_blocks(path) if b.lang in PYTHON_LANGS | SHELL_LANGS]


# ------------------------------------------------------------------------------------------------ python blocks

class _DocumentRun:
    """The shared namespace and working directory of one document's python blocks."""

    def __init__(self, cwd: Path):
        self.namespace: Dict[str, object] = {"__name__": "__doc_block__"}
        self.cwd = str(cwd)
        self.done: set = set()
        self.failed: Optional[str] = None


_RUNS: Dict[Path, _DocumentRun] = {}


@pytest.fixture(scope="module")
def document_runs(tmp_path_factory):
    """One _DocumentRun per document, for this module's tests; dropped at the end (closing what they hold)."""
    def get(path: Path) -> _DocumentRun:
        if path not in _RUNS:
            _RUNS[path] = _DocumentRun(tmp_path_factory.mktemp("doc-blocks"))
        return _RUNS[path]

    yield get
    for run in _RUNS.values():
        for value in run.namespace.values():
            close = getattr(value, "close", None)
            if callable(close) and type(value).__name__ == "LMDBStore":
                close()
    _RUNS.clear()


def _execute(block: Block, run: _DocumentRun) -> None:
    old = os.getcwd()
    os.chdir(run.cwd)
    try:
        if block.code.lstrip().startswith(">>>"):
            parser = doctest.DocTestParser()
            test = parser.get_doctest(block.code, run.namespace, block.where, str(block.path), block.line - 1)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
            runner.run(test, clear_globs=False)
            if runner.failures:
                raise AssertionError("%d doctest example(s) of %s failed (see the output above)"
                                     % (runner.failures, block.where))
        else:
            # Padding keeps the document's line numbers in tracebacks.
            source = "\n" * (block.line - 1) + block.code
            exec(compile(shown_values_checked(source, block, run.namespace), str(block.path), "exec"),
                 run.namespace)
    finally:
        os.chdir(old)


# ------------------------------------------------------------------------------------------------ shown values
#
# A plain python block shows values in comments: ``merkle.root(leaves).hex()   # 'acda...'`` or, on the lines
# after an expression, ``# ('85af...', 1)``. Each such value is checked against what the expression gives, as
# doctest would: the comment's first Python literal (a string, bytes, number, tuple, list, dict, True, False,
# None; "returns " before it is allowed) must match repr() of the value, ``...`` or ``…`` standing for any text.
# A comment after ``print(...)`` must match what it prints. Comments that start with words ("# root hash; ...")
# are prose and are not checked. Every checked expression must run: a shown value nothing computes fails too.

_LITERAL_START = re.compile(r"""^(?:returns\s+)?(?=[\'"(\[{]|b['"]|-?\d|True\b|False\b|None\b)""")


def _literal_prefix(text: str) -> Optional[str]:
    """The Python literal text at the start of a comment (brackets and quotes balanced), or None."""
    m = _LITERAL_START.match(text)
    if not m:
        return None
    text = text[m.end():]
    word = re.match(r"^(True|False|None|-?\d[\d_]*(?:\.\d+)?(?:e-?\d+)?)\b", text)
    if word:
        return word.group(1)
    depth, quote, i = 0, None, 0
    if text.startswith(("b'", 'b"')):
        i = 1
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
                if depth == 0:
                    return text[:i + 1]
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[:i + 1]
        i += 1
    return None


def _comments(source: str) -> Dict[int, str]:
    import io
    import tokenize

    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = (tok.string[1:].strip(), tok.line.strip().startswith("#"))
    return out


def shown_values(source: str) -> Dict[int, tuple]:
    """{line of an expression statement: ("repr" | "print", the shown text)} for a block's padded source."""
    import ast

    comments = _comments(source)
    tree = ast.parse(source)
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if not isinstance(node, ast.Expr):
            continue
        end = node.end_lineno
        texts = []
        if end in comments and not comments[end][1]:
            texts.append(comments[end][0])
        else:
            line = end + 1
            while line in comments and comments[line][1]:
                texts.append(comments[line][0])
                line += 1
        if not texts:
            continue
        is_print = isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "print"
        if is_print:
            found[node.lineno] = ("print", " ".join(texts))
        else:
            literal = _literal_prefix(texts[0])
            if literal is not None:
                found[node.lineno] = ("repr", literal)
    return found


def _matches(want: str, got: str) -> bool:
    want = want.replace("\u2026", "...")
    return doctest.OutputChecker().check_output(want + "\n", got + "\n",
                                                doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)


def shown_values_checked(source: str, block: "Block", namespace: dict):
    """The block's code with every shown value checked (see above): an AST to compile."""
    import ast
    import contextlib
    import io

    shown = shown_values(source)
    unchecked = set(shown)

    def value(line, got):
        kind, want = shown[line]
        unchecked.discard(line)
        if not _matches(want, repr(got)):
            raise AssertionError("%s:%d shows %s, but the expression gives %r" % (block.path.name, line, want, got))
        return got

    def printed(line, *args, **kwargs):
        kind, want = shown[line]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            print(*args, **kwargs)
        text = buf.getvalue()
        print(text, end="")
        unchecked.discard(line)
        if not _matches(want, text.strip()):
            raise AssertionError("%s:%d shows the output %r, but it prints %r" % (block.path.name, line, want, text))

    class Wrap(ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            return node

        visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

        def visit_Expr(self, node):
            if node.lineno not in shown:
                return node
            line = ast.Constant(node.lineno)
            if shown[node.lineno][0] == "print":
                call = node.value
                node.value = ast.Call(ast.Name("__doc_printed__", ast.Load()), [line, *call.args], call.keywords)
            else:
                node.value = ast.Call(ast.Name("__doc_value__", ast.Load()), [line, node.value], [])
            return ast.copy_location(node, node)

    tree = Wrap().visit(ast.parse(source))
    # After the block: every shown value was computed.
    tree.body.append(ast.Expr(ast.Call(ast.Name("__doc_all_checked__", ast.Load()), [], [])))
    ast.fix_missing_locations(tree)

    def all_checked():
        if unchecked:
            raise AssertionError("%s: the values shown at line(s) %s were never computed" % (
                block.path.name, ", ".join(str(n) for n in sorted(unchecked))))

    namespace["__doc_value__"] = value
    namespace["__doc_printed__"] = printed
    namespace["__doc_all_checked__"] = all_checked
    return tree


PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b.lang in PYTHON_LANGS]


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.where for b in PYTHON_BLOCKS])
def test_python_block_runs(block, document_runs):
    run = document_runs(block.path)
    # Run every earlier block of the document first (normally done by the earlier tests, in order).
    for earlier in [b for b in PYTHON_BLOCKS if b.path == block.path and b.line < block.line]:
        if earlier.line in run.done or earlier.skip:
            continue
        if run.failed:
            pytest.skip("an earlier block of this document failed: %s" % run.failed)
        try:
            _execute(earlier, run)
        except BaseException:
            run.failed = earlier.where
            raise
        run.done.add(earlier.line)
    if block.skip:
        pytest.skip("marked not runnable: %s" % block.skip)
    if run.failed:
        pytest.skip("an earlier block of this document failed: %s" % run.failed)
    if block.line in run.done:
        return
    try:
        _execute(block, run)
    except BaseException:
        run.failed = block.where
        raise
    run.done.add(block.line)


# ------------------------------------------------------------------------------------------------ shell blocks

def _make_targets() -> set:
    targets = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:(?!=)", line)
        if m and not line.startswith((".PHONY", "\t")):
            targets.update(m.group(1).split())
    return targets


def _extras() -> set:
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([A-Za-z0-9_-]+)\s*=\s*\[", section, re.M))


def _commands(code: str) -> List[List[str]]:
    """The simple commands of a shell block: comments dropped, continuation lines joined, split at && || ; |."""
    joined = re.sub(r"\\\n", " ", code)
    commands: List[List[str]] = []
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        if not line or line.startswith("#"):
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: List[str] = []
        for token in lexer:
            if token in ("&&", "||", ";", "|", "&"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(token)
        if current:
            commands.append(current)
    return commands


def _parse_or_fail(parser: argparse.ArgumentParser, args: List[str], what: str, where: str) -> None:
    try:
        parser.parse_args(args)
    except SystemExit as e:
        if e.code:
            pytest.fail("%s: `%s %s` does not parse" % (where, what, " ".join(args)))


def check_command(argv: List[str], where: str) -> None:
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):     # VAR=value prefixes
        argv = argv[1:]
    if not argv:
        return
    prog, args = argv[0], argv[1:]
    if prog == "make":
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        for target in targets:
            assert target in _make_targets(), "%s: make has no target %r" % (where, target)
    elif prog in ("pip", "pip3") or (prog.startswith("python") and args[:2] == ["-m", "pip"]):
        for arg in args:
            m = re.match(r"^(?:[\w-]+)?\.?\[([\w,\s-]+)\]$", arg) or re.match(r"^\.\[([\w,\s-]+)\]$", arg)
            if m and (arg.startswith(".[") or arg.startswith("mpt-engine[")):
                for extra in m.group(1).split(","):
                    assert extra.strip() in _extras(), "%s: pyproject.toml has no extra %r" % (where, extra)
    elif prog.startswith("python"):
        if args[:1] == ["-m"] and len(args) > 1:
            module, rest = args[1], args[2:]
            assert importlib.util.find_spec(module) is not None, "%s: no module %s" % (where, module)
            if module == "mpt.bench":
                from mpt.bench.__main__ import build_parser
                _parse_or_fail(build_parser(), rest, "python -m mpt.bench", where)
            elif module == "mpt":
                from mpt.__main__ import build_parser
                _parse_or_fail(build_parser(), rest, "python -m mpt", where)
            if "--config" in rest:
                config = rest[rest.index("--config") + 1]
                assert (ROOT / config).is_file(), "%s: no file %s" % (where, config)
        elif args and args[0].endswith(".py"):
            assert (ROOT / args[0]).is_file(), "%s: no script %s" % (where, args[0])
    elif prog in ("bash", "sh") and args and args[0].endswith(".sh"):
        assert (ROOT / args[0]).is_file(), "%s: no script %s" % (where, args[0])


SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.lang in SHELL_LANGS]


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[b.where for b in SHELL_BLOCKS])
def test_shell_block_refers_to_what_exists(block):
    if block.skip:
        pytest.skip("marked not runnable: %s" % block.skip)
    commands = _commands(block.code)
    assert commands, "%s: an empty shell block" % block.where
    for argv in commands:
        check_command(argv, block.where)


# ------------------------------------------------------------------------------------------------ the harness

def test_blocks_are_found_in_every_kind_of_document():
    kinds = {(b.path.suffix, b.lang in PYTHON_LANGS) for b in ALL_BLOCKS}
    assert (".md", True) in kinds and (".rst", True) in kinds and (".rst", False) in kinds
    assert any(b.path.name == "README.md" for b in PYTHON_BLOCKS)
    # Few exceptions, each with a reason (docs/execution_specs.rst's needs the spec extra; its own tests run it).
    skipped = [b for b in ALL_BLOCKS if b.skip]
    assert len(skipped) <= 4, [b.where for b in skipped]


def test_extraction_of_both_syntaxes(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n\n```python\nx = 1\n```\n\n<!-- not-runnable: needs a network -->\n```sh\nmake nope\n```\n")
    got = markdown_blocks(md)
    assert [(b.line, b.lang, b.code, b.skip) for b in got] == [
        (4, "python", "x = 1\n", None), (9, "sh", "make nope\n", "needs a network")]
    rst = tmp_path / "x.rst"
    rst.write_text("Title\n=====\n\n.. not-runnable: takes minutes\n\n.. code-block:: python\n   :caption: c\n\n"
                   "   for i in range(2):\n       pass\n\n   y = 2\n\nafter\n")
    (b,) = rst_blocks(rst)
    assert (b.line, b.lang, b.code, b.skip) == (9, "python", "for i in range(2):\n    pass\n\ny = 2\n", "takes minutes")


def test_shell_checks_catch_mistakes():
    with pytest.raises(AssertionError, match="no target"):
        check_command(["make", "no-such-target"], "x")
    with pytest.raises(AssertionError, match="no extra"):
        check_command(["pip", "install", "-e", ".[nope]"], "x")
    with pytest.raises(AssertionError, match="no module"):
        check_command(["python", "-m", "mpt.no_such_module"], "x")
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        check_command(["python", "-m", "mpt.bench", "--no-such-flag"], "x")
    check_command(["K=10", "make", "asv"], "x")
    assert _commands("a && b | c # comment\nd \\\n  e\n") == [["a"], ["b"], ["c"], ["d", "e"]]


def test_shown_values_are_checked(tmp_path):
    """A value a block shows in a comment is compared with what the code gives (issue 30: merkle.rst showed
    'acda...' for a root that is 36642e73...)."""
    def run_block(code):
        block = Block(tmp_path / "x.rst", 1, "python", code, None)
        _execute(block, _DocumentRun(tmp_path))

    run_block("(1 + 1)   # 2\n'ab' * 2    # 'ab...'\nb'x'\n# b'x'\nNone  # None; prose after it\n"
              "len('abc')  # the length: prose, not checked\nprint('a', 1)  # a 1\n"
              "('%064x' % 5, 1)\n# ('0000…05', 1)\n")
    for wrong, message in (("(1 + 1)   # 3\n", "shows 3, but the expression gives 2"),
                           ("'36642e73'  # 'acda...' (CometBFT)\n", "shows 'acda...'"),
                           ("print('x')   # y\n", "shows the output 'y'"),
                           ("if False:\n    1  # 1\n", "never computed"),
                           ("True  # returns False: ...\n", "shows False")):
        with pytest.raises(AssertionError, match=re.escape(message)):
            run_block(wrong)
    assert _literal_prefix("('85af', 1): the root") == "('85af', 1)"
    assert _literal_prefix("b'value'") == "b'value'" and _literal_prefix("12, computed") == "12"
    assert _literal_prefix("root hash; mpt.EMPTY_ROOT") is None


@pytest.mark.parametrize("block", [b for b in PYTHON_BLOCKS if not b.skip], ids=lambda b: b.where)
def test_python_blocks_need_nothing_outside_the_package(block):
    """A block runs for someone who installed the package (an sdist or a wheel): it may not reach into the
    repository (issue 30: iavl.rst read tests/vectors/... next to mpt.__file__)."""
    for needle in ("__file__", "tests/vectors", "tests/", "/work/"):
        assert needle not in block.code, "%s reads %s" % (block.where, needle)
