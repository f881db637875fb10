#!/usr/bin/env python3
"""The tests the documentation cites, checked against the tests that exist: every backticked
name in README.md and docs/*.md that reads as a test (`cli.generate_tiny_gpt`,
`Config.EachWordHasOneMessage`, `NonFiniteUpdates.*`, `cli.formats_value_overflow{,_below}`)
and whose first word is a test suite or prefix of this repository must name a test: one
`ctest -N` lists in BUILD, a gtest TEST/TEST_F/TEST_P of tests/, or an add_test(NAME ...) of
the CMake files (those registered only where a tool is installed count too). A wildcard must
match one. A doc that cites a renamed or deleted test fails here, naming file and line.

Usage: check_test_names.py ROOT [BUILD]
  ROOT: the repository (or a planted tree with README.md, docs/ and tests/); BUILD: a build
  directory whose `ctest -N` list counts too (optional; $CTEST names the ctest to run).
Exit 0 when every cited test exists, 1 with one line per problem (file:line: what) otherwise.
"""
import glob
import itertools
import os
import re
import subprocess
import sys

CITED = re.compile(r"`([A-Za-z][A-Za-z0-9_]*\.[A-Za-z0-9_.*{},/-]+)`")
GTEST = re.compile(r"^\s*TEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)
ADD_TEST = re.compile(r"add_test\(\s*NAME\s+([\w.-]+)")
# Backticked words that are files, not tests.
FILE_ENDINGS = (".md", ".py", ".cpp", ".hpp", ".h", ".sh", ".yaml", ".txt", ".json",
                ".jsonl", ".html", ".cmake", ".safetensors", ".gz", ".so", ".tmp", ".lock")


def existing_tests(root, build):
    names = set()
    for path in glob.glob(os.path.join(root, "tests", "**", "*.cpp"), recursive=True):
        with open(path, encoding="utf-8", errors="replace") as f:
            names.update(f"{suite}.{test}" for suite, test in GTEST.findall(f.read()))
    cmake_files = glob.glob(os.path.join(root, "tests", "**", "CMakeLists.txt"), recursive=True)
    cmake_files += glob.glob(os.path.join(root, "tests", "**", "*.cmake"), recursive=True)
    for path in cmake_files:
        with open(path, encoding="utf-8", errors="replace") as f:
            names.update(ADD_TEST.findall(f.read()))
    if build:
        listed = subprocess.run([os.environ.get("CTEST", "ctest"), "-N"], cwd=build, capture_output=True, text=True,
                                check=True).stdout
        for line in listed.splitlines():
            m = re.match(r"\s*Test\s+#\d+:\s+(\S+)", line)
            if m:
                # A parameterized gtest's name: Prefix/Suite.Test/3 -> Suite.Test
                names.add(re.sub(r"^[^/.]*/|/\d+$", "", m.group(1)))
                names.add(m.group(1))
    return names


def expand_braces(word):
    """cli.a{,_b} -> [cli.a, cli.a_b]"""
    parts = re.split(r"(\{[^{}]*\})", word)
    options = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    return ["".join(c) for c in itertools.product(*options)]


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    names = existing_tests(root, sys.argv[2] if len(sys.argv) == 3 else None)
    if not names:
        print(f"check_test_names: no tests found under {root}/tests", file=sys.stderr)
        return 2
    firsts = {n.split(".")[0] for n in names}
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    problems, cited = [], 0
    for path in docs:
        if not os.path.exists(path):
            continue
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                for match in CITED.finditer(line):
                    word = match.group(1)
                    if word.endswith(FILE_ENDINGS) or word.split(".")[0] not in firsts:
                        continue
                    for name in expand_braces(word):
                        cited += 1
                        if "*" in name:
                            pattern = re.compile(re.escape(name).replace(r"\*", ".*") + "$")
                            ok = any(pattern.match(n) for n in names)
                        else:
                            ok = name in names
                        if not ok:
                            problems.append(f"{rel}:{number}: `{name}` names no test")
    for p in problems:
        print(p)
    if problems:
        print(f"check_test_names: {len(problems)} problem(s) in {cited} cited tests")
        return 1
    print(f"check_test_names: the {cited} tests the documentation cites exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
