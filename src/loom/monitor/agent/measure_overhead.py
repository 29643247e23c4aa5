#!/usr/bin/env python3
"""`loom monitor agent` CPU overhead at 1 Hz and counter agreement with prometheus-node-exporter.

Starts the agent (port 19400) and node_exporter (port 19100, lo included), scrapes both at 1 Hz
for $DUR seconds (default 60), and prints each one's CPU share of a core (utime+stime / wall) and
RSS, plus the largest relative difference of total CPU seconds and of eth0/lo byte counters.

  python3 src/loom/monitor/agent/measure_overhead.py ./build/src/loom/cli/loom
"""
import os, re, subprocess, sys, time, urllib.request

DUR = float(os.environ.get("DUR", "60"))
tck = os.sysconf("SC_CLK_TCK")

def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read()
    rest = f[f.rfind(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / tck

def rss(pid):
    f = open(f"/proc/{pid}/stat").read()
    return int(f[f.rfind(")") + 2:].split()[21]) * os.sysconf("SC_PAGE_SIZE")

def scrape(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()

def series(text, name, **labels):
    out = []
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        m = re.match(r'([a-zA-Z_:0-9]+)(\{([^}]*)\})? (\S+)', line)
        if not m or m.group(1) != name:
            continue
        lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        if all(lab.get(k) == v for k, v in labels.items()):
            out.append((lab, float(m.group(4))))
    return out

agent = subprocess.Popen(sys.argv[1:] + ["monitor", "agent", "--listen", "127.0.0.1:19400",
                         "--interval-ms", "1000", "--socket", "/tmp/loom_measure.sock",
                         "--machine", "vm"], stderr=subprocess.DEVNULL)
ne = subprocess.Popen(["prometheus-node-exporter", "--web.listen-address=127.0.0.1:19100", "--collector.netdev.device-exclude=^$"],
                      stderr=subprocess.DEVNULL)
time.sleep(2.5)
assert agent.poll() is None and ne.poll() is None, "agent or node_exporter failed to start"
try:
    a0, n0, t0 = cpu_s(agent.pid), cpu_s(ne.pid), time.time()
    cpu_rel, net_rel = [], []
    i = 0
    while time.time() - t0 < DUR:
        la, ln = scrape(19400), scrape(19100)  # both at 1 Hz
        if i % 10 == 5:  # a few comparisons
            ca = sum(v for _, v in series(la, "loom_host_cpu_seconds_total"))
            cn = sum(v for lab, v in series(ln, "node_cpu_seconds_total")
                     if lab["mode"] in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"))
            cpu_rel.append(abs(ca - cn) / cn)
            for dev in ("eth0", "lo"):
                for d in ("receive", "transmit"):
                    va = series(la, f"loom_host_net_{d}_bytes_total", device=dev)[0][1]
                    vn = series(ln, f"node_network_{d}_bytes_total", device=dev)[0][1]
                    net_rel.append((dev, d, va, vn, abs(va - vn) / max(vn, 1)))
        i += 1
        time.sleep(max(0, t0 + i - time.time()))
    wall = time.time() - t0
    a1, n1 = cpu_s(agent.pid), cpu_s(ne.pid)
    print(f"wall {wall:.1f} s, scrapes {i} each")
    print(f"loom agent:    {a1 - a0:.2f} CPU-s = {100 * (a1 - a0) / wall:.3f}% of a core, RSS {rss(agent.pid) / 2**20:.1f} MiB")
    print(f"node_exporter: {n1 - n0:.2f} CPU-s = {100 * (n1 - n0) / wall:.3f}% of a core, RSS {rss(ne.pid) / 2**20:.1f} MiB")
    print(f"CPU seconds total, |loom - node| / node: max {max(cpu_rel):.2e} over {len(cpu_rel)} comparisons")
    worst = max(net_rel, key=lambda r: r[4])
    print(f"net bytes, max rel diff {worst[4]:.2e} ({worst[0]} {worst[1]}: loom {worst[2]:.0f} node {worst[3]:.0f}) over {len(net_rel)} comparisons")
finally:
    agent.terminate(); ne.terminate()
agent.wait(); ne.wait()
print("agent exit", agent.returncode)
