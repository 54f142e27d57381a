#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# similarity.py - which submissions of a class share their code: the
# parts each student wrote (the kit's TODOs), compared with every other
# submission's and with the reference's, by Debian's similarity-tester
# (sim_c), which sees through layout, comments and renamed identifiers.
#
#   similarity.py [-t PERCENT] KIT REFERENCE OUT MANIFEST
#
#   KIT        the kit the students got (scripts/handout/build): its
#              sender.c, client.c and common.c (at depth verbs,
#              framework/... otherwise) are what every submission shares
#   REFERENCE  the directory of the reference's sender.c (client.c,
#              common.c), or "-" for none (a kit without the reference)
#   OUT        where it writes (a directory; made if needed):
#                similarity.csv  id,similarity,similar_to: the highest
#                                share of one submission's own code found
#                                in another's, or the other's in its own,
#                                in percent, and that other (an ID, or
#                                "(reference)"); 0 and nothing for one
#                                that wrote nothing of its own
#                similarity.txt  each pair at or over PERCENT, the highest
#                                first: both shares, then sim_c's runs,
#                                the matching lines side by side
#   MANIFEST   one line a submission: a directory that holds its files
#              (sender.c, and client.c and common.c if it wrote them), a
#              tab, then its ID (the rest of the line)
#   -t PERCENT the pairs listed in similarity.txt (default 40)
#
# A student's own code: each line of their file (comments taken out,
# spaces made one) that no line of the kit's file of the same name is:
# an untouched kit has none, and the kit's code, wherever a student moved
# it, counts for nothing.  The reference's own code is found the same
# way.  The score is a hint for a person to read, never a verdict: two
# honest solutions of one lab share short idioms (docs/instructor.md,
# "Copied work").  Python 3's standard library, and sim_c.
#
# Exit status: 0 when OUT was written; 2 on a usage error or an input
# that cannot be read; 3 when sim_c is missing or fails.
import csv
import getopt
import os
import re
import subprocess
import sys

FILES = ("sender.c", "client.c", "common.c")
RUN_TOKENS = 24          # sim_c's shortest run, its default (-r)


def die(status, message):
    print(f"similarity: {message}", file=sys.stderr)
    sys.exit(status)


def strip_comments(text):
    """TEXT without its C comments (a comment's newlines kept, so that
    lines stay lines); strings and character constants are left whole."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(path):
    """PATH's lines of code: comments out, spaces made one, blanks out."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        die(2, f"cannot read {path}: {e.strerror}")
    lines = (" ".join(line.split()) for line in
             strip_comments(text).split("\n"))
    return [line for line in lines if line]


def kit_file(kit, name):
    """The kit's file NAME: at its top, or under framework/."""
    for where in (name, os.path.join("framework", name)):
        path = os.path.join(kit, where)
        if os.path.isfile(path):
            return path
    return None


TOKEN = re.compile(r"""[A-Za-z_]\w*|0[xX][0-9a-fA-F]+|\d+|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\S""")
KEYWORDS = set("""auto break case char const continue default do double else
    enum extern float for goto if inline int long register restrict return
    short signed sizeof static struct switch typedef union unsigned void
    volatile while""".split())


def shape(line):
    """LINE as sim_c sees it: each identifier one token, each number
    another, each string or character constant a third; keywords and
    punctuation as they are.  Renaming the kit's code keeps its shape."""
    out = []
    for tok in TOKEN.findall(line):
        if tok in KEYWORDS:
            out.append(tok)
        elif tok[0].isalpha() or tok[0] == "_":
            out.append("I")
        elif tok[0].isdigit():
            out.append("N")
        elif tok[0] in "\"'":
            out.append("S")
        else:
            out.append(tok)
    return " ".join(out)


def own_code(kit, files):
    """The lines of FILES (a submission's, or the reference's) whose shape
    no line of the kit's file of that name has: the student's own code.
    (The kit's code, renamed or moved about, counts for nothing.)"""
    own = []
    for path in files:
        kit_path = kit_file(kit, os.path.basename(path))
        shared = ({shape(line) for line in code_lines(kit_path)}
                  if kit_path else set())
        own += [line for line in code_lines(path)
                if shape(line) not in shared]
    return own


def read_manifest(path):
    """MANIFEST's submissions: [(ID, its files)], in its order."""
    entries = []
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for number, line in enumerate(f, 1):
                folder, tab, eid = line.rstrip("\n").partition("\t")
                if not tab or not eid or not os.path.isdir(folder):
                    die(2, f"{path}:{number}: expected a directory, a "
                        "tab and an ID")
                entries.append((eid, [os.path.join(folder, name)
                                      for name in FILES if os.path.isfile(
                                          os.path.join(folder, name))]))
    except OSError as e:
        die(2, f"cannot read {path}: {e.strerror}")
    return entries


def sim_c(args):
    try:
        run = subprocess.run(["sim_c"] + args, capture_output=True,
                             text=True, errors="replace", check=False)
    except OSError as e:
        die(3, f"cannot run sim_c ({e.strerror}): scripts/install-deps "
            "installs similarity-tester")
    if run.returncode != 0:
        die(3, f"sim_c failed: {run.stderr.strip()[:300]}")
    return run.stdout


PERCENT = re.compile(r"^(.*) consists for (\d+) % of (.*) material$")


def shares(paths):
    """{(A, B): percent of A's own code found in B} over PATHS, by sim_c
    -p (each file against every other)."""
    found = {}
    for line in sim_c(["-p", "-a", "-e", "-r", str(RUN_TOKENS), "-T"] +
                      paths).splitlines():
        m = PERCENT.match(line)
        if m:
            key = (m.group(1), m.group(3))
            found[key] = max(found.get(key, 0), int(m.group(2)))
    return found


RUN_HEADER = re.compile(r"^\S+: line \d+-\d+ *\|")


def listing(a, b, hide_b, work):
    """sim_c's runs of A against B, side by side; with HIDE_B (B is the
    reference's), B's lines left out, their line numbers kept: this file
    goes to the instructor, who may show a student their own lines, never
    the reference's."""
    out, col = [], None
    for line in sim_c(["-r", str(RUN_TOKENS), "-T", "-w", "160", a,
                       b]).split("\n"):
        if RUN_HEADER.match(line):
            col = line.index("|")
        elif hide_b and col is not None and len(line) > col and \
                line[col] == "|":
            line = line[:col + 1] + " (the reference's)"
        out.append(line.replace(work + os.sep, ""))
    return "\n".join(out)


def main():
    try:
        opts, args = getopt.getopt(sys.argv[1:], "t:h", ["help"])
    except getopt.GetoptError as e:
        die(2, f"{e}; usage: similarity.py [-t PERCENT] KIT REFERENCE "
            "OUT MANIFEST")
    threshold = 40
    for opt, value in opts:
        if opt in ("-h", "--help"):
            print("usage: similarity.py [-t PERCENT] KIT REFERENCE OUT "
                  "MANIFEST (see its top)")
            return 0
        if not value.isdigit() or not 1 <= int(value) <= 100:
            die(2, f"-t {value}: not a percentage from 1 to 100")
        threshold = int(value)
    if len(args) != 4:
        die(2, "usage: similarity.py [-t PERCENT] KIT REFERENCE OUT "
            "MANIFEST")
    kit, reference, out, manifest = args
    if not os.path.isdir(kit):
        die(2, f"{kit}: not a directory")
    entries = read_manifest(manifest)
    work = os.path.join(out, "similarity.d")
    os.makedirs(work, exist_ok=True)

    # Each one's own code in a file of its own, named by its place (IDs
    # are a student's text); "(reference)" too, when there is one.
    names, paths, own_size = [], [], {}
    sources = [(eid, files) for eid, files in entries]
    if reference != "-":
        ref_files = [os.path.join(reference, f) for f in FILES
                     if os.path.isfile(os.path.join(reference, f)) and
                     kit_file(kit, f)]
        sources.append(("(reference)", ref_files))
    for number, (eid, files) in enumerate(sources):
        path = os.path.join(work, f"{number}.c")
        lines = own_code(kit, files)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + ("\n" if lines else ""))
        names.append(eid)
        paths.append(path)
        own_size[path] = len(lines)
    by_path = dict(zip(paths, names))
    found = shares([p for p in paths if own_size[p] > 0])

    # Each one's most similar other: the highest share either way; of two
    # as high, the reference, then the one first in MANIFEST.
    order = {path: n for n, path in enumerate(paths)}
    rank = {name: (0, 0, 0) for name in names}
    best = {name: (0, "") for name in names}
    pairs = {}
    for (a, b), pct in found.items():
        for x, y in ((a, b), (b, a)):
            r = (pct, by_path[y] == "(reference)", -order[y])
            if r > rank[by_path[x]]:
                rank[by_path[x]] = r
                best[by_path[x]] = (pct, by_path[y])
        key = tuple(sorted((a, b)))
        pairs[key] = max(pairs.get(key, 0), pct)

    with open(os.path.join(out, "similarity.csv"), "w", newline="",
              encoding="utf-8", errors="surrogateescape") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "similarity", "similar_to"])
        for eid, _ in entries:
            w.writerow([eid, best[eid][0], best[eid][1]])
    # For the gradebook (grade-class.sh), in MANIFEST's order: the share
    # and the other's line in MANIFEST (from 1; "reference"; or nothing).
    place = {eid: str(n) for n, (eid, _) in enumerate(entries, 1)}
    place["(reference)"] = "reference"
    with open(os.path.join(work, "columns"), "w", encoding="utf-8") as f:
        for eid, _ in entries:
            f.write(f"{best[eid][0]}\t{place.get(best[eid][1], '')}\n")
    with open(os.path.join(out, "similarity.txt"), "w",
              encoding="utf-8", errors="surrogateescape") as f:
        listed = sorted(((pct, a, b) for (a, b), pct in pairs.items()
                         if pct >= threshold), reverse=True)
        f.write(f"{len(listed)} pair{'' if len(listed) == 1 else 's'} "
                f"at or over {threshold} %\n")
        for pct, a, b in listed:
            if by_path[a] == "(reference)":
                a, b = b, a         # (the reference's side on the right)
            na, nb = by_path[a], by_path[b]
            f.write(f"\n== {na} and {nb}: {found.get((a, b), 0)} % of "
                    f"{na}'s own code is in {nb}'s, "
                    f"{found.get((b, a), 0)} % of {nb}'s in {na}'s "
                    f"(below: {os.path.basename(a)} is {na}'s, "
                    f"{os.path.basename(b)} {nb}'s)\n")
            f.write(listing(a, b, nb == "(reference)", work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
