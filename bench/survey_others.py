"""The load other work made while a survey ran, counted from outside it (Linux).

    nohup bash run-the-survey.sh & echo $! > /tmp/sv/pid
    python bench/survey_others.py            # until that pid is gone

Every 5 s: the machine's runnable tasks (/proc/loadavg's fourth field, less this
sampler) and the runnable threads (state R) of the survey's tree (the descendants of
the pid in /tmp/sv/pid, by parent links); others = machine - survey. One JSON line per
sample in /tmp/sv/samples.jsonl. This is how the 6 December 2026 survey's
`others_running` was measured, before the survey counted it itself
(`survey/loadshare.py`, the same count every 2 s from inside). Reads only.
"""
import json, os, sys, time
root = int(open("/tmp/sv/pid").read())
def stat(pid):
    s = open(f"/proc/{pid}/stat").read()
    rest = s[s.rindex(")") + 2:].split()
    return rest[0], int(rest[1])
out = open("/tmp/sv/samples.jsonl", "a")
while True:
    try:
        os.kill(root, 0)
    except OSError:
        break
    la = open("/proc/loadavg").read().split()
    running = int(la[3].split("/")[0]) - 1
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                kids.setdefault(stat(p)[1], []).append(int(p))
            except (OSError, ValueError):
                pass
    tree, todo = set(), [root]
    while todo:
        p = todo.pop(); tree.add(p); todo += kids.get(p, [])
    ours = 0
    for p in tree:
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                try:
                    if stat(f"{p}/task/{t}")[0] == "R":
                        ours += 1
                except (OSError, ValueError):
                    pass
        except OSError:
            pass
    out.write(json.dumps({"t": round(time.time(), 1), "load1": float(la[0]), "running": running,
                          "survey": ours, "others": max(running - ours, 0), "tree": len(tree)}) + "\n")
    out.flush()
    time.sleep(5)
