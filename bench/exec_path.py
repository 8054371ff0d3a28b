#!/usr/bin/env python3
"""What each proxy in `bench/exec.sh` does on an exec's path, from its syscalls.

Reads `perf script -F pid,tid,cpu,time,event,trace` of the syscall tracepoints recorded
over a `TRACE=1 bash bench/exec.sh` run (stdin) and the bench's JSON (argv[1], for the
pids). For every connection each proxy accepted, the time between the syscall that
brought bytes in and the one that sent them on, in microseconds:

- handshake: the client's TLS ClientHello read -> the ServerHello written (TLS proxies);
- request:   the client's request read (or the session tickets written after it) -> the
             request written to the leaf;
- answer:    the leaf's first answer (the 101) read -> written to the client;
- frame:     every later read on one side -> the next write to the other.

These are the proxy's own work on the path, between a read and the write it causes:
waiting for the other ends is not in them, so they hold when the machine is too noisy for
the end-to-end latency to. Also: the eventfd self-wakes (8-byte `write`) per connection.
"""

import json
import re
import sys
from collections import Counter, defaultdict

LINE = re.compile(r"^\s*(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+syscalls:(\w+):\s*(.*)$")


def arg(trace, name):
    return int(re.search(name + r": (0x[0-9a-f]+)", trace).group(1), 16)


def ret(trace):
    value = int(re.search(r"0x[0-9a-f]+", trace).group(0), 16)
    return value - (1 << 64) if value >= 1 << 63 else value


def events(lines, pids):
    """Per pid: (time_us, kind, fd, bytes), kind one of accept, read, write, wake."""
    out = defaultdict(list)
    reading = {}
    for line in lines:
        m = LINE.match(line)
        if not m or int(m.group(1)) not in pids:
            continue
        pid, tid, _, time, event, trace = m.groups()
        pid, time = int(pid), float(time) * 1e6
        if event == "sys_enter_recvfrom":
            reading[tid] = arg(trace, "fd")
        elif event == "sys_exit_recvfrom":
            fd, n = reading.pop(tid, None), ret(trace)
            # The one-byte peek before a TLS accept is not data in.
            if fd is not None and n > 1:
                out[pid].append((time, "read", fd, n))
        elif event in ("sys_enter_writev", "sys_enter_sendto"):
            out[pid].append((time, "write", arg(trace, "fd"), 0))
        elif event == "sys_enter_write" and arg(trace, "count") == 8:
            out[pid].append((time, "wake", arg(trace, "fd"), 0))
        elif event == "sys_exit_accept4" and ret(trace) >= 0:
            out[pid].append((time, "accept", ret(trace), 0))
    return out


def connection(evs, client):
    """The four kinds of gap on one accepted connection (events up to the next accept)."""
    gaps = defaultdict(list)
    targets = Counter(fd for _, kind, fd, _ in evs if kind == "write" and fd != client)
    if not targets:
        return gaps
    leaf = targets.most_common(1)[0][0]
    rw = [e for e in evs if e[1] in ("read", "write") and e[2] in (client, leaf)]
    # handshake: the first read from the client to the first write back to it
    first_read = next((i for i, e in enumerate(rw) if e[1] == "read"), None)
    if first_read is not None:
        nxt = next((e for e in rw[first_read + 1 :] if e[1] == "write"), None)
        if nxt is not None and nxt[2] == client:
            gaps["handshake"].append(nxt[0] - rw[first_read][0])
    # request: the client's last read or write before the first write to the leaf. Not
    # the read alone: a TLS 1.3 server reads the client's Finished with the request behind
    # it, and checks it and writes its session tickets first, on both proxies alike.
    out_at = next((i for i, e in enumerate(rw) if e[1] == "write" and e[2] == leaf), None)
    if out_at is None:
        return gaps
    before = [e for e in rw[:out_at] if e[2] == client]
    if before and any(e[1] == "read" for e in before[1:]):
        gaps["request"].append(rw[out_at][0] - before[-1][0])
    # answer, then frames: a read from one side followed at once by a write to the other
    answered = False
    for (t, kind, fd, _), (t_next, kind_next, fd_next, _) in zip(rw[out_at + 1 :], rw[out_at + 2 :]):
        if kind == "read" and kind_next == "write" and fd_next != fd:
            gaps["frame" if answered or fd != leaf else "answer"].append(t_next - t)
            answered = answered or fd == leaf
    return gaps


def summary(values):
    if not values:
        return None
    values = sorted(values)
    pick = lambda q: round(values[min(len(values) - 1, int(len(values) * q))], 1)
    return {"n": len(values), "p50": pick(0.5), "p90": pick(0.9)}


def main():
    bench = json.load(open(sys.argv[1]))
    pids = {int(pid): name for name, pid in bench["pids"].items()}
    per_pid = events(sys.stdin, pids)
    report = {}
    for pid, evs in per_pid.items():
        accepts = [i for i, e in enumerate(evs) if e[1] == "accept"]
        gaps = defaultdict(list)
        for n, i in enumerate(accepts):
            end = accepts[n + 1] if n + 1 < len(accepts) else len(evs)
            # Only the latency sets' execs of `true`: the throughput runs (and the one a
            # tenant limit throttles) move records of 16 KiB.
            if any(e[1] == "read" and e[3] > 8192 for e in evs[i:end]):
                continue
            for kind, values in connection(evs[i:end], evs[i][2]).items():
                gaps[kind].extend(values)
        wakes = sum(1 for e in evs if e[1] == "wake")  # over every accepted connection
        report[pids[pid]] = {
            # The latency sets' execs read (the TCP relay has no handshake of its own).
            "execs": len(gaps["handshake"]) or len(gaps["answer"]),
            **{f"{kind}_us": summary(gaps[kind]) for kind in ("handshake", "request", "answer", "frame")},
            "self_wakes_per_connection": round(wakes / max(1, len(accepts)), 2),
        }
    print(json.dumps(report, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
