#!/usr/bin/env python3
"""Summarise a directory written by scripts/full-sitting.sh: the median and range of each A/B
scenario and build (ab.txt), and the figures of every overload, scale and history run (their
JSON). Usage: scripts/sitting-summary.py DIR"""
import glob, json, os, re, statistics, sys

d = sys.argv[1]
runs = {}
for line in open(os.path.join(d, "ab.txt")):
    if line.startswith("#") or line.startswith("quartz"):
        print(line.rstrip())
        continue
    name, build, *kv = line.split()
    runs.setdefault((name, build), []).append(dict(x.split("=", 1) for x in kv))

def num(v):
    try:
        return float(v)
    except ValueError:
        return None

for (name, build), rs in sorted(runs.items()):
    out = []
    for k in rs[0]:
        vals = [num(r.get(k, "-")) for r in rs]
        vals = [v for v in vals if v is not None]
        if not vals:
            continue
        scale = 1e6 if k.endswith("_ns") else 1
        unit = " ms" if k.endswith("_ns") else ""
        med = statistics.median(vals) / scale
        out.append(f"{k}={med:.4g}{unit} ({min(vals)/scale:.4g}–{max(vals)/scale:.4g})")
    print(f"{name} {build} n={len(rs)}: " + "; ".join(out))

def load(p):
    try:
        return json.load(open(p))
    except Exception as e:  # a run that failed: say so
        return {"error": str(e)}

for p in sorted(glob.glob(os.path.join(d, "overload-*.json"))):
    r = load(p)
    r = r[0] if isinstance(r, list) else r
    if "error" in r:
        print(os.path.basename(p), "FAILED", r["error"]); continue
    r = {**r, **r.get("overload", {})}
    w = r.get("windows", [])
    cap = r.get("capacity_fires_per_s", 0)
    print(f"{os.path.basename(p)}: capacity {cap:.0f} demanded {r.get('demanded_fires_per_s',0):.0f} achieved {r.get('achieved_fires_per_s',0):.0f} "
          f"({r.get('achieved_fires_per_s',0)/cap*100 if cap else 0:.0f} %) min {r.get('min_window')} ({r.get('min_window_ratio',0)*100:.0f} %) "
          f"seconds<90% {sum(1 for x in w if cap and x < 0.9*cap)}/{len(w)} zero {sum(1 for x in w if x == 0)} "
          f"leader {r.get('leadership_changes')} lapses {r.get('fence_lapses')} hb p99 {r.get('heartbeat_p99_ns',0)/1e6:.1f} ms max {r.get('heartbeat_max_ns',0)/1e6:.1f} ms "
          f"drain {r.get('drain_ns',0)/1e9:.1f} s drained {r.get('drained')} dup {r.get('duplicates')} missing {r.get('missing')} "
          f"ramp {[(round(x['demanded_fires_per_s']), round(x['achieved_fires_per_s'])) for x in r.get('ramp', [])]}")
    print("  windows", w)
for p in sorted(glob.glob(os.path.join(d, "scale-*.json")) + glob.glob(os.path.join(d, "history-*.json"))):
    print(os.path.basename(p), json.dumps(load(p))[:4000])
