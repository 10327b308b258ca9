#!/usr/bin/env python3
"""Checks the library's structure from its built archives (run by CTest as
`layers.structure`): every reference from one object file to another goes to
the same layer or one the layer may use (src/layers.cmake), and no two source
files depend on each other through a cycle of references. The compile and link
checks of src/CMakeLists.txt catch an upward include or call at build time;
this adds the file-level cycles and names each offending pair of files.

usage: check-layers.py LAYER=ARCHIVE=DEP1,DEP2 ...
"""
import subprocess
import sys


def symbols(archive):
    """(object, defined set, undefined set) per member of a static archive."""
    out = subprocess.run(["nm", "-A", "-P", archive], check=True, capture_output=True,
                         text=True).stdout
    objs = {}
    for line in out.splitlines():
        # "lib.a[obj.o]: sym T value size" (GNU nm -P -A)
        head, _, rest = line.partition(": ")
        if not rest:
            continue
        obj = head[head.find("[") + 1:head.rfind("]")] if "[" in head else head
        parts = rest.split()
        if len(parts) < 2:
            continue
        sym, kind = parts[0], parts[1]
        d, u = objs.setdefault(obj, (set(), set()))
        if kind == "U":
            u.add(sym)
        elif kind.isupper() and kind not in "VW":
            d.add(sym)
    return objs


def sccs(graph):
    """Strongly connected components (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]; counter[0] += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def main(argv):
    layers, allowed, objs = [], {}, {}
    for arg in argv:
        name, archive, deps = arg.split("=")
        layers.append(name)
        allowed[name] = {name} | {d for d in deps.split(",") if d}
        for obj, (d, u) in symbols(archive).items():
            objs[(name, obj)] = (d, u)
    where = {}
    for key, (d, _) in objs.items():
        for s in d:
            where[s] = key
    graph, errors = {k: set() for k in objs}, []
    for key, (_, u) in objs.items():
        for s in u:
            to = where.get(s)
            if to is None or to == key:
                continue
            if to[0] not in allowed[key[0]]:
                errors.append(f"{key[0]}/{key[1]} uses {s} of {to[0]}/{to[1]}: "
                              f"layer {key[0]} may use only {sorted(allowed[key[0]])}")
            graph[key].add(to)
    for comp in sccs(graph):
        if len(comp) > 1:
            names = ", ".join(f"{l}/{o}" for l, o in sorted(comp))
            errors.append(f"files that depend on each other in a cycle: {names}")
    for e in errors:
        print("error:", e.replace(".c.o", ".c"))
    print(f"layers: {len(objs)} object files in {len(layers)} layers, "
          f"{sum(len(v) for v in graph.values())} file dependencies, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
