#!/usr/bin/env python3
"""Rewrite the help texts and example sessions quoted in docs/cli.md and
docs/user-guide.md from the current binary (what tests/test_commands_docs.c
checks).

    python3 scripts/update-docs.py [build/planner]

Help: the fenced block after each "<!-- help: CMD -->" becomes the output of
`planner CMD --help`.  Sessions: each fenced block starting "$ planner" is run
in a scratch directory laid out like the repository (examples/, and
../shared/data); its output replaces the block's, keeping the block's
elisions: the lines before a "..." line are the first lines of the output, each
line after it the next output line with the same first word (a row number).  Review the diff before committing.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["docs/cli.md", "docs/user-guide.md"]


def run(planner, cwd, args):
    r = subprocess.run(planner + " " + args, shell=True, cwd=cwd,
                       capture_output=True, text=True)
    return r.stdout + r.stderr


def help_text(planner, cmd):
    args = "--help" if cmd == "plan" else cmd + " --help"
    return subprocess.run(planner + " " + args, shell=True, capture_output=True,
                          text=True).stdout


def session(planner, cwd, body):
    lines = body.rstrip("\n").split("\n")
    cmd, i = [], 0
    while True:
        cmd.append(lines[i])
        i += 1
        if not lines[i - 1].endswith("\\"):
            break
    args = " ".join(x.rstrip("\\").strip() for x in cmd)[len("$ planner"):]
    rest = lines[i:]
    out = run(planner, cwd, args).rstrip("\n").split("\n")
    cut = [k for k, l in enumerate(rest) if l.strip() == "..."]
    if not cut:
        new = out
    else:
        # the head keeps its length; each line after the elision becomes the
        # next output line with the same first word (a row number)
        k = cut[0]
        new, at = out[:k] + [rest[k]], k
        for line in rest[k + 1:]:
            key = line.split()[:1]
            hit = next((j for j in range(at, len(out)) if out[j].split()[:1] == key),
                       None)
            if hit is None:
                new.append(line)
            else:
                new.append(out[hit])
                at = hit + 1
    return "\n".join(cmd + new) + "\n"


def main():
    planner = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                              else os.path.join(ROOT, "build", "planner"))
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "repo")
        os.mkdir(repo)
        os.symlink(os.path.join(ROOT, "examples"), os.path.join(repo, "examples"))
        os.mkdir(os.path.join(tmp, "shared"))
        os.symlink(os.path.join(ROOT, "..", "shared", "data"),
                   os.path.join(tmp, "shared", "data"))
        for doc in DOCS:
            path = os.path.join(ROOT, doc)
            text = open(path).read()
            text = re.sub(r"(<!-- help: ([a-z]+) -->\n```\n).*?(```\n)",
                          lambda m: m.group(1) + help_text(planner, m.group(2))
                          + m.group(3), text, flags=re.S)
            text = re.sub(r"(```\n)(\$ planner.*?)(```\n)",
                          lambda m: m.group(1) + session(planner, repo, m.group(2))
                          + m.group(3), text, flags=re.S)
            open(path, "w").write(text)
            print("updated", doc)


if __name__ == "__main__":
    main()
