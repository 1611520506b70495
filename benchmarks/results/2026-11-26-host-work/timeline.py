"""Whole commands timed with their CPU time (os.wait4), rounds alternating: NAME=CMD lines on stdin
({r} in a command is the round number).

Prints one JSON line per run: label, round, wall seconds, user and system CPU seconds, exit code.
"""
import json, os, subprocess, sys, time

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
commands = [line.split("=", 1) for line in sys.stdin.read().splitlines() if "=" in line]
for r in range(1, rounds + 1):
    for label, cmd in commands:
        start = time.monotonic()
        proc = subprocess.Popen(["bash", "-c", cmd.replace("{r}", str(r))], stdout=subprocess.DEVNULL, stderr=open("/tmp/last.err", "wb"))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        print(json.dumps({"label": label, "round": r, "wall": round(wall, 4), "user": round(usage.ru_utime, 3),
                          "sys": round(usage.ru_stime, 3), "rc": os.waitstatus_to_exitcode(status)}), flush=True)
