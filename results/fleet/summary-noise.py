"""The table of results/fleet/noise.md from raw-noise/: one row per (size, schedule, setting)."""
import glob, os, re, statistics, sys
raw = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'raw-noise')
rows = []
for path in sorted(glob.glob(raw + '/*.txt')):
    name = os.path.basename(path)[:-4]
    m = re.match(r'(\d+)x(\d+)-(all-pairs|locate)-(quiet|noisy)(-.+)?$', name)
    if not m:
        continue
    nodes, lanes, schedule, setting = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4) + (m.group(5) or '').replace('-', ' ')
    seeds, faults, peak, per_fault = [], '', 0, {}
    for line in open(path):
        if re.match(r'^\d+,', line):
            f = line.strip().split(',')
            seeds.append(dict(all=f[1] == 'true', false=f[2] == 'true', runs=int(f[4]), rows=int(f[5]), cpu=float(f[8]),
                              retest=int(f[10]), watched=f[11] == 'true', transient=int(f[12]), missed=f[15].split('+') if f[15] else []))
        g = re.search(r'faults (\S+), seeds', line)
        if g:
            faults = g.group(1)
        g = re.search(r'peak resident memory of the process: (\d+) kB', line)
        if g:
            peak = max(peak, int(g.group(1)))
    if not seeds:
        continue
    n = len(seeds)
    allp = nodes * (nodes - 1) // 2
    kinds = faults.split(',')
    missed = {k: sum(k in s['missed'] for s in seeds) for k in kinds}
    rows.append((f'{nodes} x {lanes}', schedule, setting, n, 100 * sum(s['all'] for s in seeds) / n, 100 * sum(s['false'] for s in seeds) / n,
                 100 * sum(s['watched'] for s in seeds) / n,
                 ' '.join(f"{k} {100 * (n - missed[k]) / n:.1f}" for k in kinds),
                 statistics.mean(s['runs'] for s in seeds), max(s['runs'] for s in seeds), 100 * max(s['runs'] for s in seeds) / allp,
                 statistics.mean(s['retest'] for s in seeds), statistics.mean(s['transient'] for s in seeds),
                 statistics.median(s['cpu'] for s in seeds), max(s['cpu'] for s in seeds), peak / 1024))
print('| nodes x lanes | schedule | noise | seeds | every planted part named | anything else named | anything else watched | named as its kind, % of seeds | pair runs mean / max (retests in) | max / all-pairs | retest pair runs (mean) | transient rows (mean) | last judge CPU s median / max | peak RSS |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for r in rows:
    print(f'| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.1f} % | {r[5]:.1f} % | {r[6]:.1f} % | {r[7]} | {r[8]:.0f} / {r[9]} | {r[10]:.2f} % | {r[11]:.1f} | {r[12]:.0f} | {r[13]:.2f} / {r[14]:.2f} | {f"{r[15]:.0f} MiB" if r[15] else "not recorded (run stopped)"} |')
