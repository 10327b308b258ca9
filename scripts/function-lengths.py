#!/usr/bin/env python3
"""Function lengths in C files, from the signature's first line to the closing brace.
Usage: scripts/function-lengths.py [MIN] FILE...  (prints LINES FILE:LINE NAME for functions of at least MIN lines)."""
import sys, re
def strip(src):
    out=[];i=0;n=len(src)
    while i<n:
        c=src[i]
        if src.startswith('/*',i):
            j=src.find('*/',i+2); j=n if j<0 else j+2
            out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j
        elif src.startswith('//',i):
            j=src.find('\n',i); j=n if j<0 else j
            out.append(' '*(j-i)); i=j
        elif c in '"\'':
            j=i+1
            while j<n and src[j]!=c:
                j+= 2 if src[j]=='\\' else 1
            out.append(c+re.sub(r'[^\n]',' ',src[i+1:j])+c); i=j+1
        else: out.append(c); i+=1
    return ''.join(out)
def funcs(path):
    """(lines, name, first line) of every function definition: a top-level '{'
    whose declaration (the text since the last top-level ';' or '}') ends in ')'."""
    s = strip(open(path).read())
    depth, res, name, start, line, decl_start = 0, [], None, 0, 1, 0
    for idx, ch in enumerate(s):
        if ch == '\n':
            line += 1
        elif ch == '{':
            if depth == 0:
                decl = s[decl_start:idx]
                m = re.search(r'([A-Za-z_]\w*)\s*\(', decl)
                name = m.group(1) if decl.rstrip().endswith(')') and m else None
                lead = len(decl) - len(decl.lstrip())
                start = s.count('\n', 0, decl_start + lead) + 1
            depth += 1
        elif ch == '}':
            depth -= 1
            if depth == 0:
                if name:
                    res.append((line - start + 1, name, start))
                name, decl_start = None, idx + 1
        elif ch == ';' and depth == 0:
            decl_start = idx + 1
    return res
thr=int(sys.argv[1]) if len(sys.argv)>1 and sys.argv[1].isdigit() else 0
files=[a for a in sys.argv[1:] if not a.isdigit()]
for f in files:
    for n,name,st in funcs(f):
        if n>=thr: print(f"{n:5d} {f}:{st} {name}")
