"""Runs a repository checker on planted trees (the tests of tools/check_*.py): each case is a
tree made from a good one with some files changed (a file given None is left out), the
checker's exit status and the texts its output must hold."""
import os
import subprocess
import sys
import tempfile


def run(check, files):
    """(exit status, output) of `check` (a script path) run on a tree holding `files`."""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, check, root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def run_cases(check, good, cases):
    """cases: (name, changes to `good`, expected exit, texts the output must hold). Prints a
    line per case; returns 0 when every case behaves, 1 otherwise."""
    failures = 0
    for name, changes, want_rc, want_texts in cases:
        files = dict(good)
        files.update(changes)
        rc, out = run(check, {k: v for k, v in files.items() if v is not None})
        missing = [t for t in want_texts if t not in out]
        if rc != want_rc or missing:
            failures += 1
            print(f"FAIL {name}: exit {rc} (expected {want_rc}); missing {missing}\n{out}")
        else:
            print(f"ok   {name}")
    return 1 if failures else 0
