#!/usr/bin/env python3
"""Check the relative links of README.md and docs/**/*.md.

Every [text](path), [text](path#anchor), [text](#anchor), ![alt](path) and reference
definition [label]: path must point at a file or folder that exists; an anchor into a
Markdown file must name one of its headings (GitHub's rules: lower case, punctuation
dropped, spaces to hyphens, "-1", "-2", ... for repeats) or an explicit
<a name=...>/id=... anchor. Links to other sites (http:, https:, mailto:) are not
followed. Links inside code blocks and `code spans` are ignored.

Usage: scripts/check_docs.py [FILE.md ...]   (default: README.md and docs/**/*.md)
Prints each broken link as FILE:LINE: message and exits 1 if there is one.
Only the standard library is used.
"""
import os
import pathlib
import re
import sys
import unicodedata
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); text may hold one level of brackets (an image in a link).
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def strip_code_spans(line):
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def lines_outside_code(text):
    """(line number, line) for every line outside fenced code blocks (indented code blocks
    are not recognised: in these pages indentation continues a list item)."""
    fence = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield n, line


def heading_text(raw):
    """The rendered text of a heading: links to their text, code and emphasis unwrapped."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*|_)(.+?)\1", r"\2", text)
    return text


def github_slug(text):
    text = heading_text(text).strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LN" or cat == "Mn":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


_anchor_cache = {}


def anchors_of(path):
    if path in _anchor_cache:
        return _anchor_cache[path]
    text = path.read_text(encoding="utf-8")
    seen = {}
    anchors = set()
    prev = None
    for _, line in lines_outside_code(text):
        m = HEADING.match(line)
        title = None
        if m:
            title = m.group(2)
        elif prev and prev.strip() and SETEXT.match(line) and not prev.lstrip().startswith(("|", "-", "*")):
            title = prev.strip()
        if title is not None:
            slug = github_slug(title)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
        for a in HTML_ANCHOR.findall(line):
            anchors.add(a)
        prev = line
    _anchor_cache[path] = anchors
    return anchors


def check_file(md):
    problems = []
    text = md.read_text(encoding="utf-8")
    for n, line in lines_outside_code(text):
        plain = strip_code_spans(line)
        targets = [m.group(2) for m in INLINE_LINK.finditer(plain)]
        m = REF_DEF.match(plain)
        if m:
            targets.append(m.group(1))
        for target in targets:
            target = target.strip("<>")
            if EXTERNAL.match(target) or target.startswith("//"):
                continue
            path_part, _, anchor = target.partition("#")
            path_part = urllib.parse.unquote(path_part)
            anchor = urllib.parse.unquote(anchor)
            dest = md if not path_part else (md.parent / path_part)
            where = f"{md.relative_to(ROOT)}:{n}"
            if path_part.startswith("/"):
                problems.append(f"{where}: absolute path '{target}' (use a relative link)")
                continue
            if not dest.exists():
                problems.append(f"{where}: '{target}': no such file {os.path.relpath(dest, ROOT)}")
                continue
            if anchor:
                if dest.is_dir() or dest.suffix.lower() != ".md":
                    problems.append(f"{where}: '{target}': an anchor into something that is not a Markdown file")
                elif anchor not in anchors_of(dest.resolve()):
                    problems.append(f"{where}: '{target}': no heading '#{anchor}' in {os.path.relpath(dest, ROOT)}")
    return problems


def main(argv):
    if argv:
        files = [pathlib.Path(a).resolve() for a in argv]
    else:
        files = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    problems = []
    for f in files:
        problems += check_file(f)
    for p in problems:
        print(p)
    sys.stdout.flush()
    links = "broken link" if len(problems) == 1 else "broken links"
    print(f"check_docs: {len(files)} file(s), {len(problems)} {links}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
