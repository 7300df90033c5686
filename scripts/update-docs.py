#!/usr/bin/env python3
"""Rewrite the help texts and example sessions quoted in docs/*.md and
README.md from the current binary (what tests/test_commands_docs.c checks;
the conventions are in docs/testing.md, "The docs test").

    python3 scripts/update-docs.py [build/planner]

Help: the fenced block after each "<!-- help: CMD -->" becomes the output of
`planner CMD --help`.  Sessions: each fenced block (at any indentation) whose
first line is "$ planner ..." and that is not marked "<!-- not run: ... -->"
is run in a scratch directory laid out like the repository (examples/, and
../shared/data), one directory per page, in the page's order; its output
replaces the block's, keeping the block's elisions: the lines before a "..."
line are the first lines of the output, each line after it the next output
line with the same first word (a row number).  Indented (four-space)
sessions and blocks of several commands are checked by the test but left
as they are.  Review the diff before committing.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs"))
              if f.endswith(".md")) + ["README.md"]


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


def rewrite(planner, repo, text):
    """text with its help blocks and fenced sessions rewritten."""
    text = re.sub(r"(<!-- help: ([a-z]+) -->\n```\n).*?(```\n)",
                  lambda m: m.group(1) + help_text(planner, m.group(2))
                  + m.group(3), text, flags=re.S)
    lines = text.split("\n")
    out, i, marker = [], 0, ""
    while i < len(lines):
        line = lines[i]
        if line.strip():
            fence = line.lstrip().startswith("```")
            if not fence:
                marker = line.strip()
        if line.lstrip().startswith("```"):
            ind = line[:len(line) - len(line.lstrip())]
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            body = [x[len(ind):] if x.startswith(ind) else x.lstrip()
                    for x in lines[i + 1:j]]
            runs = (body and body[0].startswith("$ planner")
                    and sum(x.startswith("$ ") for x in body) == 1
                    and not marker.startswith("<!-- not run:"))
            if runs:
                new = session(planner, repo, "\n".join(body) + "\n")
                body = new.rstrip("\n").split("\n")
            out.append(line)
            out.extend((ind + x) if x else x for x in body)
            if j < len(lines):
                out.append(lines[j])
            marker, i = "", j + 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def main():
    planner = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                              else os.path.join(ROOT, "build", "planner"))
    for doc in DOCS:
        with tempfile.TemporaryDirectory() as tmp:
            repo = os.path.join(tmp, "repo")
            os.mkdir(repo)
            os.symlink(os.path.join(ROOT, "examples"), os.path.join(repo, "examples"))
            os.mkdir(os.path.join(tmp, "shared"))
            os.symlink(os.path.join(ROOT, "..", "shared", "data"),
                       os.path.join(tmp, "shared", "data"))
            path = os.path.join(ROOT, doc)
            text = open(path).read()
            new = rewrite(planner, repo, text)
            if new != text:
                open(path, "w").write(new)
                print("updated", doc)


if __name__ == "__main__":
    main()
