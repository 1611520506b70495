"""Medians of run-gpu.sh's wall clocks and stats: OUT_DIR -> a table on stdout."""
import glob, json, os, re, statistics, sys
out = sys.argv[1]
walls = {}
for line in open(os.path.join(out, "walls.txt")):
    m = re.match(r"r\d+ (\S+) (\S+) (\S+) rc=(\d+) wall=([\d.]+)", line)
    if m and m.group(4) == "0":
        walls.setdefault((m.group(1), m.group(2), m.group(3)), []).append(float(m.group(5)))
frames = {"c1080-25": 25, "c1080": 250, "c2160": 100}
print("clip decoder | ffmpeg wall s | old wall s | mid wall s | new wall s | old/ffmpeg | mid/ffmpeg | new/ffmpeg (frames/s ratios)")
for clip in frames:
    for dec in ("sw", "nvdec"):
        med = {who: statistics.median(walls[(clip, dec, who)]) for who in ("ffmpeg", "old", "mid", "new") if (clip, dec, who) in walls}
        if len(med) == 4:
            print(f"{clip} {dec} | {med['ffmpeg']:.3f} | {med['old']:.3f} | {med['mid']:.3f} | {med['new']:.3f} | "
                  f"{med['ffmpeg']/med['old']:.0%} | {med['ffmpeg']/med['mid']:.0%} | {med['ffmpeg']/med['new']:.0%}")
print()
print("clip decoder binary | time_to_first_frame s (median) | setup s | steady fps | startup steps (last round)")
for path in sorted(glob.glob(os.path.join(out, "s-3-*.json"))):
    key = os.path.basename(path)[4:-5]
    rounds = [json.load(open(p))["pipelines"][0] for p in glob.glob(os.path.join(out, f"s-*-{key}.json"))]
    ttff = [p.get("time_to_first_frame") for p in rounds if p.get("time_to_first_frame") is not None]
    p = rounds[-1]
    print(key, "|", round(statistics.median(ttff), 3) if ttff else "-", "|", round(statistics.median(r["setup_seconds"] for r in rounds), 3), "|",
          round(statistics.median(r["fps"] for r in rounds)), "|", p.get("startup"), "|", p.get("engine"))
