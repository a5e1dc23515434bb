import glob, os, re, statistics, sys
raw = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'raw')
order = ['pairs', 'ring', 'random', 'locate', 'all-pairs']
rows = []
for path in glob.glob(raw + '/*.txt'):
    name = os.path.basename(path)[:-4]
    nodes, schedule = name.split('x8-')
    seeds = []
    peak = '?'
    for line in open(path):
        if re.match(r'^\d+,', line):
            f = line.strip().split(',')
            seeds.append(dict(seed=int(f[0]), all=f[1] == 'true', false=f[2] == 'true', rounds=int(f[3]), runs=int(f[4]), rows=int(f[5]), judge=float(f[6]),
                              cpu=float(f[8]) if len(f) > 8 else float('nan'), sweeps=int(f[9]) if len(f) > 9 else 0))
        m = re.search(r'peak resident memory of the process: (\d+) kB', line)
        if m:
            # One line a process (a range of seeds): the most of any.
            kib = max(int(m.group(1)), 0 if peak == '?' else kib)
            peak = '%.0f MiB' % (kib / 1024)
    if not seeds:
        continue
    n = int(nodes)
    allp = n * (n - 1) // 2
    done = len({s['seed'] for s in seeds})
    rows.append((n, order.index(schedule), schedule, done, 100 * sum(s['all'] for s in seeds) / len(seeds),
                 100 * sum(s['false'] for s in seeds) / len(seeds),
                 statistics.mean(s['rounds'] for s in seeds), max(s['rounds'] for s in seeds),
                 statistics.mean(s['runs'] for s in seeds), max(s['runs'] for s in seeds),
                 100 * max(s['runs'] for s in seeds) / allp, max(s['rows'] for s in seeds),
                 statistics.median(s['judge'] for s in seeds), max(s['judge'] for s in seeds), peak,
                 'complete' if peak != '?' else 'cut short',
                 statistics.median(s['cpu'] for s in seeds), max(s['cpu'] for s in seeds),
                 min(s['sweeps'] for s in seeds), max(s['sweeps'] for s in seeds)))
rows.sort()
print('| nodes x lanes | schedule | seeds | every planted part named | anything else named | rounds mean / max | pair runs mean / max | max pair runs / all-pairs | rows judged (max) | judge CPU s median / max | judge wall s median / max | sweeps min / max | peak RSS (simulate + judge) |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for r in rows:
    print(f'| {r[0]} x 8 | {r[2]} | {r[3]}{"" if r[15]=="complete" else " (cut short)"} | {r[4]:.1f} % | {r[5]:.1f} % | {r[6]:.1f} / {r[7]} | {r[8]:.0f} / {r[9]} | {r[10]:.2f} % | {r[11]} | {r[16]:.2f} / {r[17]:.2f} | {r[12]:.2f} / {r[13]:.2f} | {r[18]} / {r[19]} | {r[14]} |')
