"""Compare corpus before/after: identical, or after = before minus dead temporaries."""
import difflib
import os
import re
import sys

B, A = "/tmp/engine-corpus/before", "/tmp/engine-corpus/after"
prefix = sys.argv[1] if len(sys.argv) > 1 else ""
TEMP = re.compile(r"^\s*(t\d+(_\d+)?|f\d+|v\d+)(_p\d+)? = ")
COMMENT = re.compile(r"^\s*# s\d+:")
stats = dict(identical=0, dead_only=0, other=0, missing=0, removed_lines=0, removed_assign=0)
bad = []
for name in sorted(os.listdir(B)):
    if not name.startswith(prefix):
        continue
    pa = os.path.join(A, name)
    if not os.path.exists(pa):
        stats["missing"] += 1
        continue
    b = open(os.path.join(B, name)).read().splitlines()
    a = open(pa).read().splitlines()
    if a == b:
        stats["identical"] += 1
        continue
    sm = difflib.SequenceMatcher(None, b, a, autojunk=False)
    ok = True
    removed = []
    for tag, i1, i2, _j1, _j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if tag != "delete":
            ok = False
            break
        removed += b[i1:i2]
    if ok and all(TEMP.match(line) or COMMENT.match(line) for line in removed):
        # every removed assignment's value is never read before the name is assigned again
        deleted = set()
        for tag, i1, i2, _j1, _j2 in sm.get_opcodes():
            if tag == "delete":
                deleted.update(range(i1, i2))
        for n in deleted:
            m = TEMP.match(b[n])
            if not m:
                continue
            nm = b[n].split("=")[0].strip()
            pat = re.compile(r"\b" + re.escape(nm) + r"\b")
            for line in b[n + 1:]:
                if re.match(r"^\s*" + re.escape(nm) + r" = ", line):
                    if pat.search(line.split("=", 1)[1]):
                        ok = False
                    break
                if pat.search(line):
                    ok = False
                    break
        if ok:
            stats["dead_only"] += 1
            stats["removed_lines"] += len(removed)
            stats["removed_assign"] += sum(bool(TEMP.match(line)) for line in removed)
            continue
    stats["other"] += 1
    bad.append(name)
print(stats)
for n in bad[:20]:
    print("DIFF", n)
