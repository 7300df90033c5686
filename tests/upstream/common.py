"""What the launcher checks share: the upstream sources, the interpreter that
runs them, and the generated launch scripts run with recording stand-ins of
the launcher commands (torchrun, deepspeed) so that the real shell decides
what each command receives."""

import json
import os
import stat
import subprocess
import sys
import tempfile

DIST_PACKAGES = "/usr/lib/python3/dist-packages"
SKIP = 77


def skip(reason):
    """Exit with the skip code after saying why (ctest SKIP_RETURN_CODE)."""
    print("skipped: " + reason)
    sys.stdout.flush()
    sys.exit(SKIP)


def use_debian_torch():
    """Make Debian's python3-torch importable after this interpreter's own
    packages (so that its pydantic 2, when it has one, comes first)."""
    if DIST_PACKAGES not in sys.path and os.path.isdir(DIST_PACKAGES):
        sys.path.append(DIST_PACKAGES)


_RECORDER = r'''#!/bin/sh
# records how it was called: argv and the environment, one JSON per call
exec "%(python)s" -c '
import json, os, sys
with open(os.environ["HETPLAN_RECORD"], "a") as f:
    f.write(json.dumps({"cmd": os.path.basename(sys.argv[1]), "argv": sys.argv[2:],
                        "env": dict(os.environ)}) + "\n")
' "$0" "$@"
'''


def run_script(script, args=(), env=None, commands=("torchrun", "deepspeed"),
               cwd=None, timeout=60):
    """Run the shell script `script` with `args` under /bin/sh, with every
    name in `commands` on PATH replaced by a recorder.  Returns (exit code,
    stderr, [{'cmd', 'argv', 'env'}, ...]) in call order."""
    with tempfile.TemporaryDirectory(prefix="hetplan-rec-") as tmp:
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        for name in commands:
            path = os.path.join(bindir, name)
            with open(path, "w") as f:
                f.write(_RECORDER % {"python": sys.executable})
            os.chmod(path, stat.S_IRWXU)
        record = os.path.join(tmp, "calls.jsonl")
        e = dict(os.environ if env is None else env)
        e["PATH"] = bindir + os.pathsep + e.get("PATH", "/usr/bin:/bin")
        e["HETPLAN_RECORD"] = record
        p = subprocess.run(["/bin/sh", script] + list(args), env=e, cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, text=True)
        calls = []
        if os.path.exists(record):
            with open(record) as f:
                for line in f:
                    c = json.loads(line)
                    c["env"].pop("HETPLAN_RECORD", None)
                    calls.append(c)
        return p.returncode, p.stderr, calls
