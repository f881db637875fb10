#!/usr/bin/env python3
"""The commands the documentation shows, checked against the program: every command line in a
fenced code block of README.md and docs/cli.md that runs `mantissa` (or a script of bench/,
scripts/) is run with --help; it must exit 0 (an unknown command fails), and every option the
line shows must be one the help lists (an unknown option fails), and every word a synopsis
offers for an option (`--mode train|eval`) must appear in that help (the help is generated from
the name tables, so a word the program no longer takes fails).

Usage: check_docs.py MANTISSA ROOT [DOC...]
  MANTISSA: the built program; ROOT: the repository; DOC: the files to read (relative to ROOT;
  default README.md docs/cli.md).
Exit 0 when every command checks, 1 with one line per problem (file:line: what) otherwise.
"""
import os
import re
import shlex
import subprocess
import sys

OPTION = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]*")
SCRIPT = re.compile(r"^(bench|scripts)/[\w.-]+\.(sh|py)$")


def commands(path):
    """(line number, the command's words) for each command line of the fenced blocks."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    in_block = False
    pending, start = "", 0
    for number, raw in enumerate(lines, start=1):
        if raw.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            continue
        line = raw.rstrip("\n")
        if not pending:
            start = number
        text = pending + line
        if text.endswith("\\"):
            pending = text[:-1] + " "
            continue
        pending = ""
        text = re.sub(r"\s+#\s.*$", "", text).strip()
        text = re.sub(r"^\$\s+", "", text)
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        if not words:
            continue
        first = re.sub(r"^\./", "", words[0])
        if first in ("mantissa", "build/mantissa") or SCRIPT.match(first):
            out.append((start, [first] + words[1:]))
    return out


def subcommand_path(words):
    """The leading words that name (sub)commands: those before the first option or argument
    that is not a plain lowercase word naming a subcommand the caller checks."""
    path = []
    for w in words:
        if w.startswith("-") or not re.fullmatch(r"[a-z][a-z_]*", w):
            break
        path.append(w)
    return path


def help_text(argv):
    p = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def check_command(program, root, where, words):
    problems = []
    if words[0].endswith("mantissa"):
        rest = words[1:]
        # Only words the program knows as subcommands count: try the longest prefix first.
        path = subcommand_path(rest)
        while True:
            rc, text = help_text([program] + path)
            if rc == 0 or not path:
                break
            path = path[:-1]
        if rc != 0:
            return [f"{where}: `mantissa --help` exits {rc}"]
        # A lowercase word after the path that is not an option's value: an unknown command
        # unless the command takes positional arguments (its usage line shows them).
        shown = " ".join(["mantissa"] + path)
        args = rest[len(path):]
        if args and re.fullmatch(r"[a-z]+", args[0]) and "SUBCOMMAND" in text:
            problems.append(f"{where}: `{shown} {args[0]}`: no such command")
    else:
        script = os.path.join(root, words[0])
        if not os.path.isfile(script):
            return [f"{where}: {words[0]}: no such script"]
        runner = ["bash"] if script.endswith(".sh") else [sys.executable]
        rc, text = help_text(runner + [script])
        if rc != 0:
            return [f"{where}: `{words[0]} --help` exits {rc}: {text.strip()[:200]}"]
        shown, args = words[0], words[1:]
    known = set(re.findall(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)", text))
    for i, w in enumerate(args):
        m = OPTION.match(w.lstrip("["))
        if not m:
            continue
        option = m.group(0)
        if option not in known:
            problems.append(f"{where}: `{shown}` has no option {option} (its --help lists: "
                            f"{', '.join(sorted(o for o in known if o.startswith('--')))})")
            continue
        # The words a synopsis offers: `--mode train|eval`, `--formats a,b,c`.
        if i + 1 < len(args):
            value = args[i + 1].rstrip("]")
            if "|" in value or ("," in value and value == value.lower()):
                for word in re.split(r"[|,]", value):
                    if re.fullmatch(r"[a-z][a-z0-9_]*", word) and not re.search(
                            rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
                        problems.append(f"{where}: `{shown} {option}` offers '{word}', which "
                                        f"its --help does not name")
    return problems


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    program, root = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    docs = argv[3:] or ["README.md", "docs/cli.md"]
    problems, count = [], 0
    for doc in docs:
        for number, words in commands(os.path.join(root, doc)):
            count += 1
            problems.extend(check_command(program, root, f"{doc}:{number}", words))
    for p in problems:
        print(p)
    if count == 0:
        print("check_docs: no commands found in " + ", ".join(docs))
        return 1
    if problems:
        print(f"check_docs: {len(problems)} problem(s) in {count} commands")
        return 1
    print(f"check_docs: {count} commands of {', '.join(docs)} match the program")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
