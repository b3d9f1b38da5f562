#!/usr/bin/env python3
"""Where a process's mapped-file resident memory is.

    bench/rssfile.py PID SECONDS THRESHOLD_MIB

Samples /proc/PID/status every 0.1 s for SECONDS. The first eight times
RssFile is above THRESHOLD_MIB it prints VmRSS, RssAnon and RssFile and
the twelve mappings with the most resident MiB (from /proc/PID/smaps, by
file name); at the end, RssFile's median, 90th percentile and highest.
Linux only. "Ten minutes of the 4 KiB soak" in RESULTS.md quotes it.
"""
import collections
import sys
import time


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) // 1024
    return out


def by_file(pid):
    per, cur = collections.Counter(), None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            p = line.split()
            if "-" in p[0] and not p[0].endswith(":"):
                cur = p[5].rsplit("/", 1)[-1] if len(p) > 5 else "[anon]"
            elif p[0] == "Rss:" and cur:
                per[cur] += int(p[1])
    return [(k, v // 1024) for k, v in per.most_common(12) if v >= 1024]


def main():
    pid, secs, thr = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    end, shots, hist = time.time() + secs, 0, []
    while time.time() < end:
        try:
            s = status(pid)
        except OSError:
            break
        hist.append(s["RssFile"])
        if s["RssFile"] > thr and shots < 8:
            shots += 1
            print(time.strftime("%H:%M:%S"), s, by_file(pid), flush=True)
        time.sleep(0.1)
    if hist:
        hist.sort()
        print("RssFile MiB p50", hist[len(hist) // 2], "p90", hist[len(hist) * 9 // 10], "max", hist[-1])


if __name__ == "__main__":
    main()
