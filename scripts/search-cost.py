#!/usr/bin/env python3
"""search-cost.py DATA CX [BASE_CX] — what a `cx ctl search` costs as a process, in instructions.

The measure (../shared/recall-dev/measure) times a search beside `cx ctl version`; on a busy or
virtual machine two builds' times can differ by more than a change does (even two copies of one
binary, written differently, do). `perf stat -e instructions:u` counts what the process runs, the
same however busy the machine is. Each build gets its own CX_HOME with DATA (LoCoMo-shaped, as the
measure reads it) imported, and each project's window written (as the index's upkeep keeps it);
then every 10th of DATA's questions is searched as the measure does. Prints the median
instructions of a search beside those of `cx ctl version`, for each build.
"""
import importlib.util, os, statistics, subprocess, sys, tempfile

data, builds = sys.argv[1], sys.argv[2:]
here = os.path.dirname(os.path.abspath(data))  # locomo.py is beside the data
spec = importlib.util.spec_from_file_location("locomo", os.path.join(here, "locomo.py"))
L = importlib.util.module_from_spec(spec)
spec.loader.exec_module(L)
questions = list(L.questions(data))[::10]


def instructions(cx, env, args):
    p = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", cx, "ctl"] + args,
                       capture_output=True, text=True, env=env)
    for line in p.stderr.splitlines():
        if "instructions" in line:
            return int(line.split(",")[0])
    raise SystemExit("perf stat gave no count for %s: %s" % (args, p.stderr.strip()))


for label, cx in zip(["this build", "BASE"], builds):
    with tempfile.TemporaryDirectory() as t:
        env = dict(os.environ, CX_HOME=t + "/cx")
        os.makedirs(t + "/cx")
        write = [sys.executable, os.path.join(here, "locomo.py"), "write", data, t + "/codex", t + "/work", t + "/map.json"]
        subprocess.run(write, check=True, capture_output=True)
        subprocess.run([cx, "ctl", "import", "--codex-home", t + "/codex"], check=True, capture_output=True, env=env)
        convs = sorted({q["conv"] for q in questions})
        for c in convs:
            os.makedirs("%s/work/conv%d" % (t, c), exist_ok=True)
            subprocess.run([cx, "ctl", "recall", "--project", "%s/work/conv%d" % (t, c), "--", "the windows"],
                           capture_output=True, env=env)
        windows = os.listdir(t + "/cx/recall") if os.path.isdir(t + "/cx/recall") else []
        if len(windows) < len(convs):  # the figure is of searches whose candidates come from a window
            raise SystemExit("%s: %d windows for %d projects after a recall in each" % (label, len(windows), len(convs)))
        search = [instructions(cx, env, ["search", "--project", "%s/work/conv%d" % (t, q["conv"]), "--json", "--limit", "5", "--", q["q"]])
                  for q in questions]
        version = statistics.median(instructions(cx, env, ["version"]) for _ in range(5))
        s = statistics.median(search)
        print("%s: a search %.2f million instructions (median of %d questions) vs cx ctl version %.2f: %.2fx"
              % (label, s / 1e6, len(search), version / 1e6, s / version))
