"""The tables of issue 41's scale proofs from the output of sweep-scale.sh: python3 summary-scale.py OUTDIR.

One row per (size, schedule, setting): how often every planted part was named as its kind and how
often anything else was named or watched (each with its one-sided 95 % Clopper-Pearson bound: 0 of
200 bounds a rate below 1.5 %, so "<= 1 %" needs about 300 clean seeds), each planted kind's share,
pair runs (retests in) against all-pairs', the judge's CPU time of the last judgement (every row,
retests in) and the peak resident memory of the processes (simulator included), from
`/usr/bin/time -v` where it ran, else the simulator's own VmHWM line. Then the timed runs: the judge
alone at the largest size, all-pairs, without retests.
"""
import glob
import math
import os
import re
import statistics
import sys

GOAL_NAMED, GOAL_OTHER, GOAL_LOCATE = 99.0, 1.0, 5.0


def log_binom_cdf(k, n, p):
    """ln P(X <= k), X ~ Binomial(n, p)."""
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 0.0 if k >= n else -math.inf
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)
             for i in range(0, k + 1)]
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def upper_bound(k, n, confidence=0.95):
    """One-sided Clopper-Pearson upper bound of a rate seen k times in n."""
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if log_binom_cdf(k, n, mid) > math.log(1 - confidence):
            lo = mid
        else:
            hi = mid
    return hi


def lower_bound(k, n, confidence=0.95):
    """One-sided Clopper-Pearson lower bound of a rate seen k times in n."""
    return 1.0 - upper_bound(n - k, n, confidence)


def time_v(path):
    """(max RSS kB, user s, elapsed) from a /usr/bin/time -v file, or Nones."""
    try:
        text = open(path).read()
    except OSError:
        return None, None, None
    rss = re.search(r'Maximum resident set size \(kbytes\): (\d+)', text)
    user = re.search(r'User time \(seconds\): ([\d.]+)', text)
    wall = re.search(r'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)', text)
    return (int(rss.group(1)) if rss else None, float(user.group(1)) if user else None, wall.group(1) if wall else None)


def seeds_of(path):
    """The seed lines of a simulate output (by the header's names), its faults and its own peak (kB)."""
    header, seeds, faults, peak = None, [], '', 0
    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('seed,'):
            header = line.split(',')
        elif header and re.match(r'^\d+,', line):
            seeds.append(dict(zip(header, line.split(','))))
        g = re.search(r'faults (\S+), seeds', line)
        if g:
            faults = g.group(1)
        g = re.search(r'peak resident memory of the process: (\d+) kB', line)
        if g:
            peak = max(peak, int(g.group(1)))
    return seeds, faults, peak


def percent(k, n):
    return 100.0 * k / n if n else float('nan')


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else '.'
    rows = []
    for path in sorted(glob.glob(os.path.join(out, '*.txt'))):
        name = os.path.basename(path)[:-4]
        m = re.match(r'(\d+)x(\d+)-(all-pairs|locate)-(quiet|noisy)$', name)
        if not m:
            continue
        nodes, lanes, schedule, setting = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        seeds, faults, own_peak = seeds_of(path)
        if not seeds:
            continue
        peaks = [time_v(part)[0] for part in glob.glob(os.path.join(out, 'parts', name + '.*.txt.time'))]
        peaks = [peak for peak in peaks if peak]
        peak = max(peaks) if peaks else own_peak
        n = len(seeds)
        kinds = faults.split(',') if faults else []
        missed = {k: sum(k in s['missed'].split('+') for s in seeds) for k in kinds}
        allp = nodes * (nodes - 1) // 2
        runs = [int(s['pair_runs']) for s in seeds]
        named = sum(s['all_named'] == 'true' for s in seeds)
        other = sum(s['false_named'] == 'true' for s in seeds)
        watched = sum(s['false_watched'] == 'true' for s in seeds)
        cpu = [float(s['judge_cpu_s']) for s in seeds]
        goals = []
        goals.append('named' if 100 * lower_bound(named, n) >= GOAL_NAMED else ('named (not proven)' if named == n else 'NAMED MISSED'))
        goals.append('other' if 100 * upper_bound(other, n) <= GOAL_OTHER else ('other (not proven)' if other <= n * GOAL_OTHER / 100 else 'OTHER OVER'))
        if schedule == 'locate':
            goals.append('pair runs' if 100 * max(runs) / allp <= GOAL_LOCATE else 'PAIR RUNS OVER')
        rows.append([
            f'{nodes} x {lanes}', schedule, setting, str(n),
            f'{percent(named, n):.1f} % (>= {100 * lower_bound(named, n):.1f} %)',
            f'{percent(other, n):.1f} % (<= {100 * upper_bound(other, n):.1f} %)',
            f'{percent(watched, n):.1f} % (<= {100 * upper_bound(watched, n):.1f} %)',
            ' '.join(f'{k} {percent(n - missed[k], n):.1f}' for k in kinds),
            f'{statistics.mean(runs):.0f} / {max(runs)}', f'{100 * max(runs) / allp:.2f} %',
            f"{statistics.mean(int(s['retest_runs']) for s in seeds):.1f}",
            f"{statistics.mean(int(s['transient_rows']) for s in seeds):.0f}",
            f'{statistics.median(cpu):.2f} / {max(cpu):.2f}',
            f'{peak / 1024:.0f} MiB' if peak else 'not recorded',
            ', '.join(goals),
        ])
    print('| nodes x lanes | schedule | noise | seeds | every planted part named (95 % lower bound) | anything else named (95 % upper bound) | anything else watched (95 % upper bound) | named as its kind, % of seeds | pair runs mean / max (retests in) | max / all-pairs | retest pair runs (mean) | transient rows (mean) | last judge CPU s median / max | peak RSS of a process | goals met |')
    print('|' + '---|' * 15)
    for row in rows:
        print('| ' + ' | '.join(row) + ' |')

    timed = sorted(glob.glob(os.path.join(out, 'timed-*.txt')))
    if timed:
        print()
        print('| timed run (no retests) | rows judged | judge CPU s (its thread) | judge wall s | process peak RSS | process user CPU s | process wall | verdict |')
        print('|---|---|---|---|---|---|---|---|')
        for path in timed:
            seeds, _, own_peak = seeds_of(path)
            rss, user, wall = time_v(path + '.time')
            rss = rss or own_peak
            for s in seeds:
                verdict = 'every planted part named' if s['all_named'] == 'true' else f"missed {s['missed']}"
                if s['false_named'] == 'true':
                    verdict += ', something else named'
                print(f"| {os.path.basename(path)[6:-4]} seed {s['seed']} | {s['rows']} | {float(s['judge_cpu_s']):.1f} | {float(s['judge_s']):.1f} | "
                      f"{f'{rss / 1024:.0f} MiB' if rss else 'not recorded'} | {user if user is not None else 'not recorded'} | {wall or 'not recorded'} | {verdict} |")


if __name__ == '__main__':
    main()
