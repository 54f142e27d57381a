#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""chart.py - draw a sequence chart of one Lab 3 session, as the receiver
saw it, beside the lab's expected sequence, with the first place they
differ marked.

  python3 scripts/lib/chart.py --trace TRACE [--run RUN.json]
          [--html OUT.html] [--text OUT.txt]

TRACE holds the receiver's -v lines (stderr), each after the time it was
read: "<epoch seconds.micro> <line>", and the session's summary line as
"<time> summary: <line>".  RUN.json (from scripts/grade) gives the file's
bytes, the receiver's window and windows, the sender's exit and the
grader's stages.  OUT is "-" for stdout; with neither --html nor --text,
the text chart goes to stdout.

Everything in TRACE came from a run of a student's sender, and its peer's
words (IDs, reasons, names) from the sender itself: control characters
and terminal escapes are stripped from every text, and the HTML escapes
every text it shows.  Lines it does not know are shown as "other".
Python 3's standard library only: it runs on the grading host.
"""
import argparse
import html
import json
import re
import sys
import unicodedata

USAGE = ("chart.py --trace TRACE [--run RUN.json] [--html OUT.html] "
         "[--text OUT.txt]")
SHOW_CHUNKS = 2         # chunks shown at each end of a long run
FOLD_MIN = 3            # fewer like chunks than this are not folded
TEXT_MAX = 160          # characters of one text from the trace, at most


class Fail(Exception):
    """Bad input: one line on stderr, exit 1."""


# ---- Text from the trace: never trusted ----

ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?"
                  r"|[@-Z\\-_])")


def clean(text, limit=TEXT_MAX):
    """TEXT without terminal escapes or control (or format) characters,
    at most LIMIT characters."""
    text = ANSI.sub("", text)
    text = "".join(c for c in text
                   if unicodedata.category(c)[0] != "C" or c == " ")
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return text


def ascii_only(text):
    """TEXT for a terminal: plain ASCII."""
    return text.encode("ascii", "replace").decode("ascii")


# ---- Reading the trace ----

R_TIME = re.compile(r"^(\d{1,12}(?:\.\d{1,9})?)\s+(.*)$")
R_CONNREQ = re.compile(r"^receiver: session (\d+): connection request "
                       r"from (.*)$")
R_CM = re.compile(r"^receiver: cm event: (?:RDMA_CM_EVENT_)?(\S+)")
R_MSG = re.compile(r"^receiver: (send|received) ([A-Za-z_]+) \((\d+) "
                   r"bytes\)(?:: (.*))?$")
R_WC = re.compile(r"^receiver: completion: (\S+) wr_id=(\d+) status=(.*?) "
                  r"byte_len=(\d+)$")
R_OFFER = re.compile(r"^receiver: session \d+: chunk (\d+) \(offset (\d+), "
                     r"(\d+) bytes\) in window (\d+)$")
R_CHECK = re.compile(r"^receiver: session \d+: chunk (\d+) \(offset (\d+), "
                     r"(\d+) bytes\) checked: (\d+) of (\d+) places written$")
R_STATE = re.compile(r"^receiver: session \d+: state [A-Z_]+$")
R_REFUSE = re.compile(r"^receiver: refusing a connection: (.*)$")
R_ROOM = re.compile(r"^receiver: session \d+: the send queue is full")
R_CPU = re.compile(r"^receiver: session \d+: cpu: ")
R_SUMMARY = re.compile(r"^summary: (.*)$")
R_OFFLEN = re.compile(r"^offset (\d+), (\d+) bytes")
R_INFO = re.compile(r"^(\d+) bytes, name \"(.*)\"$")
R_ERROR = re.compile(r"^([A-Z_?]+[a-z?]*): (.*)$")


def parse_trace(data):
    """The events of a trace (bytes): a list of dicts with t (seconds,
    or None) and kind, and what each kind has.  Nothing in it is an
    error: a line it does not know is an "other" event."""
    events = []
    last_t = None
    for raw in data.decode("utf-8", "replace").splitlines():
        raw = raw.rstrip("\r")
        if not raw.strip():
            continue
        m = R_TIME.match(raw)
        if m:
            t, line = float(m.group(1)), m.group(2)
            last_t = t
        else:
            t, line = last_t, raw
        ev = parse_line(clean(line, 400))
        ev["t"] = t
        events.append(ev)
    return events


def parse_line(line):
    """One line of the trace (cleaned, without its time) as an event."""
    m = R_CONNREQ.match(line)
    if m:
        return {"kind": "request", "peer": clean(m.group(2))}
    m = R_CM.match(line)
    if m:
        return {"kind": "cm", "event": m.group(1)}
    m = R_MSG.match(line)
    if m:
        return parse_msg(m.group(1), m.group(2), int(m.group(3)),
                         m.group(4) or "")
    m = R_WC.match(line)
    if m:
        return {"kind": "wc", "op": m.group(1), "status": clean(m.group(3)),
                "ok": m.group(3) == "success"}
    m = R_OFFER.match(line)
    if m:
        return {"kind": "offer", "chunk": int(m.group(1)),
                "window": int(m.group(4))}
    m = R_CHECK.match(line)
    if m:
        return {"kind": "check", "chunk": int(m.group(1)),
                "offset": int(m.group(2)), "length": int(m.group(3)),
                "written": int(m.group(4)), "places": int(m.group(5))}
    if R_STATE.match(line) or R_ROOM.match(line) or R_CPU.match(line):
        return {"kind": "skip"}
    m = R_REFUSE.match(line)
    if m:
        return {"kind": "refused", "why": clean(m.group(1))}
    m = R_SUMMARY.match(line)
    if m:
        return parse_summary(m.group(1))
    return {"kind": "other", "text": clean(line)}


def parse_msg(way, name, size, fields):
    """A message the receiver sent or received, with its fields."""
    ev = {"kind": "msg", "dir": "r2s" if way == "send" else "s2r",
          "type": name, "size": size, "fields": clean(fields)}
    m = R_OFFLEN.match(fields)
    if name in ("REGION", "DONE") and m:
        ev["offset"], ev["length"] = int(m.group(1)), int(m.group(2))
    m = R_INFO.match(fields)
    if name == "FILE_INFO" and m:
        ev["length"], ev["name"] = int(m.group(1)), clean(m.group(2))
    if name == "VERDICT":
        ev["verdict"] = fields.strip()
    if name == "ID":
        ev["id"] = clean(fields.strip()[1:-1] if fields.startswith('"')
                         else fields)
    m = R_ERROR.match(fields)
    if name == "ERROR":
        ev["code"] = m.group(1) if m else "?"
        ev["reason"] = clean(m.group(2) if m else fields)
    return ev


def parse_summary(line):
    """The receiver's summary line: its verdict and failure, if any."""
    ev = {"kind": "summary", "text": clean(line, 400)}
    m = re.search(r", verdict (\w+)", line)
    ev["verdict"] = m.group(1) if m else None
    m = re.search(r", failed: (.*)$", line)
    ev["failed"] = clean(m.group(1), 300) if m else None
    return ev


# ---- The run's settings and RUN.json ----

def load_run(path):
    """RUN.json's fields, checked; {} without one."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as f:
            run = json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise Fail("cannot read %s: %s" % (path, clean(str(e))))
    if not isinstance(run, dict):
        raise Fail("%s: not a JSON object" % path)
    for key in ("file_bytes", "window", "windows", "sender_exit"):
        if key in run and run[key] is not None and (
                not isinstance(run[key], int) or isinstance(run[key], bool)
                or run[key] < 0):
            raise Fail("%s: %s is not a whole number" % (path, key))
    if run.get("window") == 0 or run.get("windows") == 0:
        raise Fail("%s: window and windows must be at least 1" % path)
    stages = run.get("stages", [])
    if not isinstance(stages, list) or not all(
            isinstance(s, dict) for s in stages):
        raise Fail("%s: stages is not a list of objects" % path)
    return run


def settings(run, events):
    """The file's bytes, the window and the windows: from RUN.json, else
    from what the trace shows."""
    size = run.get("file_bytes")
    window = run.get("window")
    windows = run.get("windows")
    regions = [e for e in events if e["kind"] == "msg" and
               e["type"] == "REGION" and "length" in e]
    if size is None:
        info = [e for e in events if e["kind"] == "msg" and
                e["type"] == "FILE_INFO" and "length" in e]
        size = info[0]["length"] if info else None
    if window is None and regions:
        window = max(e["length"] for e in regions) or None
    if windows is None:
        offers = [e["window"] for e in events if e["kind"] == "offer"]
        windows = max(offers) + 1 if offers else 1
    return size, window, windows


def chunk_count(size, window):
    """How many chunks a file of SIZE bytes travels in (an empty one: 1)."""
    if size is None:
        return None
    return max(1, -(-size // window))


def chunk_len(size, window, k):
    return max(0, min(window, size - k * window))


# ---- The chart: the run's rows, each beside what the lab expected ----

class Expect:
    """The lab's sequence, followed as the run goes: what may come next
    (REGIONs and DONEs may interleave as the windows allow)."""

    def __init__(self, size, window, windows):
        self.size, self.window, self.windows = size, window or 1, windows
        self.chunks = 1 if size == 0 else chunk_count(size, window) \
            if window else None
        self.established = self.info = False
        self.offered = self.done = 0
        self.verdict = self.id = self.key = self.bye = False

    def chunk_of(self, offset):
        return offset // self.window

    def next_label(self):
        """The next item of the slides' sequence, in words."""
        if not self.established:
            return "ESTABLISHED"
        if not self.info:
            return "FILE_INFO"
        chunks = self.chunks if self.chunks is not None else self.offered
        if self.offered < chunks and self.offered - self.done < self.windows:
            return "REGION (chunk %d)" % self.offered
        if self.done < self.offered:
            return "WRITEs + DONE (chunk %d)" % self.done
        if not self.verdict:
            return "VERDICT good"
        if not self.id:
            return "ID"
        if not self.key:
            return "KEY"
        if not self.bye:
            return "disconnect"
        return "(the end)"

    def next_from_sender(self):
        """What the sender was to do next, in words."""
        if not self.established:
            return "connect"
        if not self.info:
            return "FILE_INFO"
        if self.done < self.offered:
            return "WRITEs + DONE (chunk %d)" % self.done
        chunks = self.chunks if self.chunks is not None else self.offered
        if self.done < chunks:
            return "REGION (chunk %d), then its WRITEs and DONE" % self.done
        if not self.verdict:
            return "VERDICT"
        if not self.id:
            return "ID"
        if not self.key:
            return "KEY"
        return "disconnect"

    def remaining(self):
        """What the lab's sequence still holds: rows of text, runs of
        chunks folded."""
        rows = []
        if not self.established:
            rows.append("ESTABLISHED")
        if not self.info:
            rows.append("FILE_INFO")
        chunks = self.chunks if self.chunks is not None else self.offered
        first = min(self.offered, self.done)
        if chunks - first > 2 * SHOW_CHUNKS + FOLD_MIN:
            show = list(range(first, first + SHOW_CHUNKS))
            folded = (first + SHOW_CHUNKS, chunks - SHOW_CHUNKS - 1)
            show += list(range(chunks - SHOW_CHUNKS, chunks))
        else:
            show, folded = list(range(first, chunks)), None
        for k in show:
            if folded and k == folded[1] + 1:
                rows.append("chunks %d-%d: REGION, WRITEs, DONE (x %d)" %
                            (folded[0], folded[1],
                             folded[1] - folded[0] + 1))
            parts = []
            if k >= self.offered:
                parts.append("REGION")
            if k >= self.done:
                parts.append("WRITEs + DONE")
            rows.append("%s (chunk %d)" % (", ".join(parts), k))
        for done, label in ((self.verdict, "VERDICT good"), (self.id, "ID"),
                            (self.key, "KEY"), (self.bye, "disconnect")):
            if not done:
                rows.append(label)
        return rows


def build_rows(events, exp, summary):
    """The chart's rows, in the run's order, each with what the lab
    expected there; the first that differs carries "diff"."""
    rows = []
    sends = []          # the messages sent, for their SEND completions
    state = {"diff": None, "ended": False}

    def add(row, ok, expected, why=None):
        row["expected"] = expected
        row["ok"] = ok
        if not ok and state["diff"] is None:
            state["diff"] = row
            row["diff"] = why
        rows.append(row)
        return row

    for ev in events:
        t, kind = ev["t"], ev["kind"]
        base = {"t": t, "chunk": None}
        if kind == "request":
            rows.append(dict(base, lane="note", text="connection request "
                             "from %s" % ev["peer"], ok=True,
                             expected=""))
        elif kind == "cm":
            cm_row(ev, base, exp, add, rows)
        elif kind == "msg":
            msg_row(ev, base, exp, add, rows, sends)
        elif kind == "wc":
            wc_row(ev, base, add, rows, sends, state)
        elif kind == "offer":
            for r in reversed(rows):
                if r.get("type") == "REGION" and r["chunk"] == ev["chunk"]:
                    r["text"] += ", window %d" % ev["window"]
                    break
        elif kind == "check":
            check_row(ev, rows, state)
        elif kind == "refused":
            add(dict(base, lane="note", text="the receiver refused the "
                     "connection: %s" % ev["why"]), False, exp.next_label(),
                "the receiver refused the connection: %s" % ev["why"])
        elif kind == "other":
            rows.append(dict(base, lane="note", text="other: " + ev["text"],
                             ok=True, expected=""))
    for r in rows:      # the WRITEs rows take their DONE's time
        if r.get("writes_of") is not None:
            r["t"] = r["writes_of"]["t"]
    return rows, state["diff"]


def cm_row(ev, base, exp, add, rows):
    name = ev["event"]
    if name == "ESTABLISHED":
        add(dict(base, lane="both", arrow="none", text="connection "
                 "established"), not exp.established, "ESTABLISHED",
            "a second ESTABLISHED")
        exp.established = True
    elif name == "DISCONNECTED":
        ok = exp.key and not exp.bye
        want = exp.next_from_sender()
        add(dict(base, lane="s2r", arrow="dash", text="disconnect"), ok,
            "disconnect" if ok else want,
            "the sender hung up; it was to send %s" % want
            if exp.next_label() == want else
            "the sender hung up while the receiver waited for %s" % want)
        exp.bye = True
    else:
        add(dict(base, lane="note", text="cm event: %s" % name), False,
            exp.next_label(), "connection event %s" % name)


def msg_row(ev, base, exp, add, rows, sends):
    """A message, sent (r2s) or received (s2r), judged by the lab's
    rules."""
    kind = ev["type"]
    row = dict(base, lane=ev["dir"], arrow="msg", type=kind)
    if ev["dir"] == "r2s":
        sends.append(row)
        want = exp.next_label()
    else:
        want = exp.next_from_sender()
    if kind == "FILE_INFO":
        row["text"] = "FILE_INFO (%s bytes, \"%s\")" % (
            ev.get("length", "?"), ev.get("name", "?"))
        ok = exp.established and not exp.info
        why = "FILE_INFO out of place"
        if ok and exp.size is not None and ev.get("length") != exp.size:
            ok, why = False, "FILE_INFO says %s bytes; the file has %d" % (
                ev.get("length", "?"), exp.size)
        add(row, ok, "FILE_INFO" if exp.established and not exp.info
            else want, why)
        exp.info = True
        return
    if kind == "REGION":
        k = exp.chunk_of(ev.get("offset", 0))
        row["chunk"] = k
        row["text"] = "REGION chunk %d (offset %s, %s bytes" % (
            k, ev.get("offset", "?"), ev.get("length", "?"))
        row["close"] = ")"
        add(row, exp.info and k == exp.offered, "REGION (chunk %d)" % k,
            "REGION out of place")
        exp.offered = max(exp.offered, k + 1)
        return
    if kind == "DONE":
        done_row(ev, row, exp, add, want)
        return
    if kind == "VERDICT":
        v = ev.get("verdict", "?")
        row["text"] = "VERDICT %s" % v
        all_in = exp.chunks is not None and exp.done >= exp.chunks
        why = ("VERDICT bad: the bytes that arrived do not have the "
               "SHA-256 that FILE_INFO announced" if v != "good"
               else "VERDICT before every chunk was in")
        add(row, all_in and v == "good", "VERDICT good", why)
        exp.verdict = True
        return
    if kind == "ID":
        row["text"] = "ID \"%s\"" % ev.get("id", "?")
        add(row, exp.verdict and not exp.id, "ID" if exp.verdict else want,
            "ID before the VERDICT" if not exp.verdict else "a second ID")
        exp.id = True
        return
    if kind == "KEY":
        row["text"] = "KEY"
        add(row, exp.id and not exp.key, "KEY", "KEY out of place")
        exp.key = True
        return
    if kind == "ERROR":
        error_row(ev, row, add, want)
        return
    row["text"] = "%s (%d bytes)" % (kind, ev["size"])
    add(row, False, want, "a message the lab does not have: %s" % kind)


def done_row(ev, row, exp, add, want):
    off, length = ev.get("offset"), ev.get("length")
    k = exp.done
    row["chunk"] = k
    row["text"] = "DONE chunk %d (offset %s, %s bytes)" % (
        exp.chunk_of(off) if off is not None else k, off, length)
    right = (exp.size is not None and off == k * exp.window and
             length == chunk_len(exp.size, exp.window, k))
    if not exp.info:
        why = "DONE before FILE_INFO"
    elif exp.done >= exp.offered:
        why = "DONE with no REGION outstanding"
    elif not right:
        why = ("DONE for offset %s, %s bytes; chunk %d is offset %d, %d "
               "bytes" % (off, length, k, k * exp.window,
                          chunk_len(exp.size or 0, exp.window, k)))
    else:
        why = None
    if why is not None:
        add(row, False, want, why)
        return
    # the WRITEs row before it, filled in by the chunk's check
    writes = {"t": ev["t"], "chunk": k, "lane": "s2r", "arrow": "write",
              "text": "WRITEs of chunk %d: not checked" % k,
              "writes_of": row, "ok": True, "expected": "WRITEs (chunk %d)"
              % k, "pending": True}
    row["writes"] = writes
    add(writes, True, writes["expected"])
    add(row, True, "DONE (chunk %d)" % k)
    exp.done += 1


def error_row(ev, row, add, want):
    reason, code = ev.get("reason", ""), ev.get("code", "?")
    if row["lane"] == "r2s":
        row["text"] = "ERROR %s: %s" % (code, reason)
        why = ("timeout: the receiver gave up waiting and sent ERROR: %s"
               if reason.startswith("timed out") else
               "the receiver stopped the session with an ERROR: %s") % reason
    else:
        row["text"] = "ERROR %s: %s" % (code, reason)
        why = "the sender sent ERROR: %s" % reason
    add(row, False, want, why)


def wc_row(ev, base, add, rows, sends, state):
    """A completion: a SEND's confirms its message went; the flushed
    ones that follow a broken connection are folded into one row."""
    if ev["ok"]:
        if ev["op"] == "SEND" and sends:
            sent = sends.pop(0)
            what = sent["type"]
            if sent["chunk"] is not None:
                what += " chunk %d" % sent["chunk"]
            rows.append(dict(base, lane="r-local", chunk=sent["chunk"],
                             text="SEND completed: " + what, ok=True,
                             expected=""))
        return
    if ev["op"] == "SEND" and sends:
        sends.pop(0)
    last = rows[-1] if rows else None
    if last is not None and last.get("flushes") and "Flushed" in ev["status"]:
        last["flushes"] += 1
        last["text"] = "completions: %d work requests flushed" % \
            last["flushes"]
        return
    flushed = "Flushed" in ev["status"]
    row = dict(base, lane="r-local", text="completion: %s failed: %s" %
               (ev["op"], ev["status"]), flushes=1 if flushed else 0)
    if flushed:
        row["text"] = "completions: 1 work request flushed"
    add(row, False, "", "the connection broke (the receiver's work "
        "requests were flushed): the sender's side failed or went away"
        if flushed else "a %s failed: %s" %
        (ev["op"], ev["status"]))


def check_row(ev, rows, state):
    """The chunk's check at its DONE: what the sender's WRITEs left."""
    for r in reversed(rows):
        w = r.get("writes")
        if w is not None and w.get("pending") and r["chunk"] == ev["chunk"]:
            break
    else:
        return
    w["pending"] = False
    n, m = ev["written"], ev["places"]
    if m == 0:
        w["text"] = "WRITEs of chunk %d: too short to check" % ev["chunk"]
        return
    if n == m:
        w["text"] = "WRITEs of chunk %d: landed (%d of %d places)" % (
            ev["chunk"], n, m)
        return
    what = "nothing landed" if n == 0 else "partly landed"
    w["text"] = "WRITEs of chunk %d: %s (%d of %d places)" % (
        ev["chunk"], what, n, m)
    w["ok"] = False
    why = ("the RDMA WRITEs of chunk %d had not landed when its DONE came: "
           "%s of the %d places checked %s written" %
           (ev["chunk"], "none" if n == 0 else "only %d" % n, m,
            "was" if n == 0 else "were"))
    # It comes before its DONE: the first difference, unless one came
    # before it.
    diff = state["diff"]
    if diff is None or rows.index(diff) > rows.index(w):
        if diff is not None:
            del diff["diff"]
        w["diff"] = why
        state["diff"] = w


def fold(rows, diff):
    """Runs of like chunks, all as expected, folded into one row each:
    the first and last SHOW_CHUNKS chunks and those around the
    difference stay."""
    chunks = [r["chunk"] for r in rows if r.get("chunk") is not None]
    if not chunks:
        return rows
    last = max(chunks)
    keep = set(range(SHOW_CHUNKS)) | set(range(last - SHOW_CHUNKS + 1,
                                               last + 1))
    if diff is not None and diff.get("chunk") is not None:
        keep |= set(range(diff["chunk"] - 3, diff["chunk"] + 3))
    out, run = [], []

    def flush():
        done = sorted({r["chunk"] for r in run if r.get("type") == "DONE"})
        if len(done) >= FOLD_MIN:
            out.append({"t": run[0]["t"], "t_end": run[-1]["t"],
                        "lane": "fold", "ok": True, "chunk": None,
                        "text": "chunks %d-%d: REGION, WRITEs, DONE as "
                        "expected (x %d)" % (done[0], done[-1], len(done)),
                        "expected": "chunks %d-%d as the lab says" %
                        (done[0], done[-1])})
        else:
            out.extend(run)
        run.clear()

    for r in rows:
        foldable = (r.get("chunk") is not None and r["chunk"] not in keep
                    and r.get("ok") and r.get("diff") is None)
        if foldable:
            run.append(r)
        else:
            if run:
                flush()
            out.append(r)
    if run:
        flush()
    return out


def make_chart(events, run):
    """Everything both renderings show."""
    size, window, windows = settings(run, events)
    exp = Expect(size, window, windows)
    summary = next((e for e in reversed(events) if e["kind"] == "summary"),
                   None)
    rows, diff = build_rows(events, exp, summary)
    diff = next((r for r in rows if r.get("diff") is not None), None)
    t0 = next((r["t"] for r in rows if r.get("text") == "connection "
               "established" and r["t"] is not None), None)
    if t0 is None:
        t0 = next((e["t"] for e in events if e["t"] is not None), None)
    end_diff = None
    if diff is None:
        good = exp.bye and exp.key
        if not good:
            end_diff = "the run ended here; the lab's next step was %s" % \
                exp.next_label()
    reason = summary["failed"] if summary else None
    return {
        "size": size, "window": window, "windows": windows,
        "chunks": exp.chunks, "t0": t0, "rows": fold(rows, diff),
        "diff": diff, "end_diff": end_diff, "reason": reason,
        "summary": summary["text"] if summary else None,
        "remaining": exp.remaining() if diff or end_diff else [],
        "run": run,
    }


# ---- Rendering: text ----

def fmt_t(t, t0):
    if t is None or t0 is None:
        return "      ?  "
    return "%7.3f s" % (t - t0)


def kib(n):
    if n is None:
        return "?"
    if n % 1024 == 0 and n >= 1024:
        return "%d KiB" % (n // 1024)
    return "%d bytes" % n


def heading(chart):
    return ("Your run, as the receiver saw it: a file of %s bytes, windows "
            "of %s, %d in flight (%s chunk%s)" % (
                chart["size"] if chart["size"] is not None else "?",
                kib(chart["window"]), chart["windows"],
                chart["chunks"] if chart["chunks"] is not None else "?",
                "" if chart["chunks"] == 1 else "s"))


WRITES_NOTE = ("The receiver cannot see the sender's RDMA WRITEs (they are "
               "one-sided): it sees only what they left in its window, "
               "checked at each DONE.")


def stage_lines(run):
    out = []
    for s in run.get("stages", []):
        status = clean(str(s.get("status", "?")))
        line = "  %s. %s: %s" % (clean(str(s.get("n", "?"))),
                                 clean(str(s.get("name") or "?")), status)
        if s.get("why"):
            line += " (%s)" % clean(str(s["why"]))
        out.append(line)
    facts = []
    if "sender_exit" in run:
        facts.append("sender exit status %s" % run["sender_exit"])
    if run.get("sender_killed"):
        facts.append("the sender was killed")
    return out, facts


def diff_text(chart):
    d = chart["diff"]
    what = d["diff"] if d is not None else chart["end_diff"]
    if what is None:
        return None
    reason = chart["reason"]
    if reason and reason not in what:
        what += "; the receiver's reason: " + reason
    return what


def render_text(chart):
    out = [heading(chart), WRITES_NOTE, ""]
    stages, facts = stage_lines(chart["run"])
    if stages:
        out += ["Stages:"] + stages
    if facts:
        out.append("  (" + "; ".join(facts) + ")")
    if stages or facts:
        out.append("")
    width = 56
    out.append("   time    %-*s  the lab expects" % (width + 20,
               "sender" + " " * (width + 6) + "receiver"))
    t0 = chart["t0"]
    for r in chart["rows"]:
        out.append(text_row(r, t0, width))
        if r.get("diff") is not None:
            out.append(">>> first difference: " + diff_text(chart))
    if chart["end_diff"]:
        out.append(">>> first difference: " + diff_text(chart))
    if chart["remaining"]:
        out.append("")
        out.append("What the lab's sequence still held (never came):")
        out += ["                   " + x for x in chart["remaining"]]
    if chart["diff"] is None and chart["end_diff"] is None:
        out.append("")
        out.append("No difference: the run follows the lab's sequence.")
    if chart["summary"]:
        out.append("")
        out.append("The receiver's summary: " + chart["summary"])
    return ascii_only("\n".join(out) + "\n")


def text_row(r, t0, width):
    """One row: the arrow between the lanes, WIDTH + 4 characters, and
    what the lab expected there."""
    t = fmt_t(r["t"], t0)
    text = clip(r["text"] + r.get("close", ""), width - 6)
    lane, arrow = r["lane"], r.get("arrow")
    if lane == "s2r":
        line = "=" if arrow == "write" else "-"
        body = (line * 4 + " " + text + " ").ljust(width + 1, line) + \
            line * 2 + ">"
    elif lane == "r2s":
        body = ("<---- " + text + " ").ljust(width + 4, "-")
    elif lane == "both":
        body = ("<=== " + text + " ").ljust(width + 1, "=") + "==>"
    else:
        body = None
    if body is not None:
        body = "sender " + body + " receiver"
    elif lane == "r-local":
        body = " " * 16 + "[receiver: " + text + "]"
    elif lane == "fold":
        body = "       ... %s, until %s ..." % (r["text"],
                                                fmt_t(r["t_end"], t0).strip())
    else:
        body = "       (" + text + ")"
    exp = r.get("expected") or ""
    line = "%s  %-*s" % (t, width + 20, body)
    if exp:
        line += "  expected: " + exp
    return line.rstrip()


# ---- Rendering: HTML with an inline SVG ----

ROW_H = 22
X_TIME, X_SEND, X_RECV, X_EXP = 4, 84, 544, 586
SVG_W = 940
CHAR_W = 7.2            # a character of the chart's 12px monospace
ARROW_CHARS = 60        # an arrow's label, at most


def e(text):
    """Text for HTML: cleaned and escaped, quotes too."""
    return html.escape(clean(str(text), 400), quote=True)


def svg_text(x, y, text, cls, anchor="start"):
    return ('<text x="%d" y="%d" class="%s" text-anchor="%s">%s</text>' %
            (x, y, cls, anchor, e(text)))


def render_html(chart):
    rows = chart["rows"]
    t0 = chart["t0"]
    body = []
    n = len(rows) + (1 if chart["end_diff"] else 0) + \
        (len(chart["remaining"]) + 1 if chart["remaining"] else 0)
    height = 50 + ROW_H * n
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img" aria-label="sequence chart">' %
           (SVG_W, height, SVG_W, height)]
    svg.append(svg_text(X_TIME, 20, "time", "head"))
    svg.append(svg_text(X_SEND, 20, "sender", "head", "middle"))
    svg.append(svg_text(X_RECV, 20, "receiver", "head", "middle"))
    svg.append(svg_text(X_EXP, 20, "the lab expects", "head"))
    top, bottom = 28, 36 + ROW_H * len(rows)
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" class="lane"/>' %
               (X_SEND, top, X_SEND, bottom))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" class="lane"/>' %
               (X_RECV, top, X_RECV, bottom))
    y = 50
    for r in rows:
        svg += svg_row(r, y, t0, chart)
        y += ROW_H
    if chart["end_diff"]:
        svg.append('<rect x="0" y="%d" width="%d" height="%d" class="band"/>'
                   % (y - 16, SVG_W, ROW_H))
        svg.append(svg_text(X_TIME, y, "\u25b6 first difference", "mark"))
        svg.append(svg_text(X_SEND + 10, y, clip(chart["end_diff"], 70),
                            "why"))
        y += ROW_H
    if chart["remaining"]:
        svg.append(svg_text(X_EXP, y, "never came:", "missing head"))
        y += ROW_H
    for item in chart["remaining"]:
        svg.append(svg_text(X_EXP, y, item, "missing"))
        y += ROW_H
    svg.append("</svg>")
    body.append("<h1>Your run beside the lab's sequence</h1>")
    body.append("<p>%s.</p>" % e(heading(chart)))
    body.append("<p class=\"note\">%s</p>" % e(WRITES_NOTE))
    what = diff_text(chart)
    if what:
        body.append('<p class="diff" id="first-difference"><b>First '
                    'difference:</b> %s</p>' % e(what))
    else:
        body.append('<p class="same">No difference: the run follows the '
                    "lab's sequence.</p>")
    side = stage_html(chart["run"])
    body.append('<div class="wrap">%s<div class="chart">%s</div></div>' %
                (side, "\n".join(svg)))
    if chart["summary"]:
        body.append("<p class=\"summary\">The receiver's summary: <code>%s"
                    "</code></p>" % e(chart["summary"]))
    return PAGE % "\n".join(body)


def clip(text, n):
    return text if len(text) <= n else text[:n - 3] + "..."


def svg_row(r, y, t0, chart):
    out = []
    lane, text = r["lane"], r["text"] + r.get("close", "")
    if r.get("diff") is not None:
        out.append('<rect x="0" y="%d" width="%d" height="%d" class="band"/>'
                   % (y - 16, SVG_W, ROW_H))
    if lane == "fold" and r["t_end"] is not None and t0 is not None:
        text += ", until %.3f s" % (r["t_end"] - t0)
    if r["t"] is not None and t0 is not None:
        t = "%.3f s" % (r["t"] - t0)
    else:
        t = ""
    out.append(svg_text(X_TIME, y, t, "time"))
    mid = (X_SEND + X_RECV) // 2
    if lane in ("s2r", "r2s", "both"):
        cls = {"write": "write", "dash": "hang"}.get(r.get("arrow"), "msg")
        if not r.get("ok"):
            cls += " bad"
        x1, x2 = (X_SEND, X_RECV) if lane != "r2s" else (X_RECV, X_SEND)
        if lane == "both":
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" class="%s"/>'
                       % (X_SEND, y + 4, X_RECV, y + 4, cls))
        else:
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" class="%s" '
                       'marker-end="url(#tip)"/>' % (x1, y + 4, x2 - (
                           6 if x2 > x1 else -6), y + 4, cls))
        out.append(svg_text(mid, y, clip(text, ARROW_CHARS), "label",
                            "middle"))
    elif lane == "r-local":
        out.append(svg_text(X_RECV - 6, y, clip(text, ARROW_CHARS), "local",
                            "end"))
    elif lane == "fold":
        out.append(svg_text(mid, y, text, "fold", "middle"))
    else:
        out.append(svg_text(X_SEND + 10, y, clip(text, ARROW_CHARS + 4),
                            "other"))
    exp = r.get("expected") or ""
    if exp:
        exp = ("\u2714 " if r.get("ok") else "\u2716 ") + exp
        out.append(svg_text(X_EXP, y, exp, "exp" if r.get("ok") else
                            "exp bad"))
    if r.get("diff") is not None:
        out.append(svg_text(X_EXP + int(CHAR_W * (len(exp) + 2)), y,
                            "\u25c0 first difference", "mark"))
    return out


def stage_html(run):
    stages, facts = run.get("stages", []), []
    if "sender_exit" in run:
        facts.append("sender exit status %s" % run["sender_exit"])
    if run.get("sender_killed"):
        facts.append("the sender was killed")
    if not stages and not facts:
        return ""
    out = ['<div class="stages"><h2>Stages</h2><ol>']
    for s in stages:
        status = clean(str(s.get("status", "?")))
        cls = {"pass": "pass", "fail": "fail"}.get(status, "other")
        item = "<b>%s</b>: <span class=\"%s\">%s</span>" % (
            e(s.get("name") or "?"), cls, e(status))
        if s.get("why"):
            item += "<br><small>%s</small>" % e(s["why"])
        out.append('<li value="%s">%s</li>' % (e(s.get("n", "")), item))
    out.append("</ol>")
    if facts:
        out.append("<p><small>%s</small></p>" % e("; ".join(facts)))
    out.append("</div>")
    return "".join(out)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Lab 3: your run beside the lab's sequence</title>
<style>
body { font: 14px/1.4 sans-serif; margin: 12px; color: #222; }
h1 { font-size: 20px; margin: 0 0 6px; }
h2 { font-size: 16px; margin: 0 0 6px; }
.note { color: #555; }
.diff { background: #fde8e8; border-left: 4px solid #c62828; padding: 6px; }
.same { background: #e8f5e9; border-left: 4px solid #2e7d32; padding: 6px; }
.wrap { display: flex; gap: 10px; align-items: flex-start; }
.stages { width: 200px; flex: none; border: 1px solid #ccc; padding: 8px;
  overflow-wrap: anywhere; }
.stages ol { padding-left: 22px; margin: 0; }
.pass { color: #2e7d32; } .fail { color: #c62828; font-weight: bold; }
.other { color: #777; }
svg text { font: 12px monospace; fill: #222; }
svg .head { font-weight: bold; font-size: 13px; }
svg .time { fill: #555; }
svg .lane { stroke: #888; stroke-width: 2; }
svg line.msg { stroke: #1565c0; stroke-width: 1.5; }
svg line.write { stroke: #6a1b9a; stroke-width: 3; }
svg line.hang { stroke: #555; stroke-dasharray: 5 4; }
svg line.bad { stroke: #c62828; }
svg .local { fill: #555; font-style: italic; }
svg .fold { fill: #2e7d32; }
svg .other { fill: #777; }
svg .exp { fill: #2e7d32; } svg .exp.bad { fill: #c62828; }
svg .band { fill: #fde8e8; }
svg .mark, svg .why { fill: #c62828; font-weight: bold; }
svg .missing { fill: #999; } svg .missing.head { font-style: italic; }
.summary code { word-break: break-all; }
</style></head><body>
<svg width="0" height="0" style="position:absolute"><defs>
<marker id="tip" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9"
 markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"
 fill="#444"/></marker></defs></svg>
%s
</body></html>
"""


# ---- The command line ----

class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Fail("%s (usage: %s)" % (message, USAGE))


def write(path, text):
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise Fail("cannot write %s: %s" % (path, err.strerror))


def main(argv):
    p = Parser(prog="chart.py", usage=USAGE, description=(
        "Draw a sequence chart of one Lab 3 session from the receiver's "
        "-v trace, beside the lab's expected sequence, with the first "
        "place they differ marked."))
    p.add_argument("--trace", required=True, help="the receiver's -v "
                   "lines, each after its time ('-' for stdin)")
    p.add_argument("--run", help="the grader's RUN.json")
    p.add_argument("--html", help="write the HTML chart here ('-': stdout)")
    p.add_argument("--text", help="write the text chart here ('-': stdout)")
    args = p.parse_args(argv)
    try:
        if args.trace == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.trace, "rb") as f:
                data = f.read()
    except OSError as err:
        raise Fail("cannot read %s: %s" % (args.trace, err.strerror))
    run = load_run(args.run)
    chart = make_chart(parse_trace(data), run)
    if args.html is None and args.text is None:
        args.text = "-"
    if args.text is not None:
        write(args.text, render_text(chart))
    if args.html is not None:
        write(args.html, render_html(chart))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fail as err:
        print("chart.py: %s" % err, file=sys.stderr)
        sys.exit(1)
    except Exception as err:   # a bug: still one line, never a traceback
        print("chart.py: internal error: %s: %s" % (
            type(err).__name__, clean(str(err))), file=sys.stderr)
        sys.exit(1)
