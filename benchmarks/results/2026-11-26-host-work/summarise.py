"""Medians of timeline.py's rounds, and each convstream row's frames/s against FFmpeg's in the
same group (clip and decoder): WALLS.jsonl -> a table."""
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
labels = []
[labels.append(r["label"]) for r in rows if r["label"] not in labels]
med = {l: st.median(r["wall"] for r in rows if r["label"] == l) for l in labels}
for l in labels:
    rs = [r for r in rows if r["label"] == l]
    group = " ".join(l.split()[:2])
    ff = med.get(group + " ffmpeg")
    ratio = f"{100 * ff / med[l]:.0f}% of FFmpeg" if ff and not l.endswith("ffmpeg") else ""
    print(f"{l:28} wall med {med[l]:.3f} [{min(r['wall'] for r in rs):.3f}-{max(r['wall'] for r in rs):.3f}]"
          f"  cpu {st.median(r['user'] + r['sys'] for r in rs):6.2f} s  rc {sorted(set(r['rc'] for r in rs))}  {ratio}")
