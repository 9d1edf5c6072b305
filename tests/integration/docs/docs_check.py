#!/usr/bin/env python3
"""tests/integration/docs/docs_check.py - the checks of docs-check.sh that read Markdown.

Each mode prints one "ok - ..." or "not ok - ..." line per check and exits 0; any other exit
status means the checker itself failed. Modes:
  options HELP DOC SECTION   every option HELP (a program's --help output) prints is in the
                             table of DOC's SECTION, and every option that table's first column
                             names is in HELP
  mentions HELP DOC          every long option HELP prints is written in DOC
  verbatim HELP DOC          HELP is in DOC word for word (a usage block)
  methods LIST DOC SECTION   every method of LIST (one a line) is a row of the table of DOC's
                             SECTION, and every method that table's first column names is in LIST
  length FILE MAX            FILE has at most MAX lines
  links TOP FILE...          every relative link of each FILE reaches a file, and for #anchor
                             links a heading of it
  paths TOP FILE...          every path into the tree that FILE names exists under TOP
"""
import glob
import os
import re
import sys

# Top folders of the tree whose paths the pages name; "controller/nvm/copy.c" is checked,
# "$SPDK/scripts/rpc.py" or "/tmp/vfu/cntrl" are not (they follow a slash or a word).
TOP_DIRS = ('app', 'backend', 'common', 'controller', 'dpa', 'host', 'hw', 'patches',
            'qemu-configs', 'scripts', 'tests', 'tools', 'transport', 'vfu')
# The controller's module folders, named on their own in the layer picture and tables.
CTRLR_DIRS = ('admin', 'core', 'device', 'nvm', 'pool', 'zns')
PATH_RE = re.compile(r'(?<![\w./$~<>-])((?:%s)/[\w.*/-]*)' % '|'.join(TOP_DIRS + CTRLR_DIRS))
# Source files named without their folder (`bdev_file.c`, `modules.c`).
BASENAME_RE = re.compile(r'`([\w.-]+\.(?:c|h|sh|mk))`')
LINK_RE = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)')
OPT_RE = re.compile(r'(?<![\w-])--[a-z][a-z0-9-]*')
SHORT_RE = re.compile(r'(?<![\w-])-[a-zA-Z](?![\w-])')


def say(ok, what):
    print(('ok - ' if ok else 'not ok - ') + what)


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def prose_lines(text):
    """The lines of a Markdown text outside fenced code blocks."""
    fenced = False
    for line in text.split('\n'):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def section(text, title):
    """The lines of the section whose heading is `title`, up to the next heading of its level
    or above."""
    out, level = [], None
    for line in prose_lines(text):
        m = re.match(r'^(#+)\s+(.*?)\s*$', line)
        if m and level is not None and len(m.group(1)) <= level:
            break
        if level is not None:
            out.append(line)
        elif m and m.group(2) == title:
            level = len(m.group(1))
    return out


def table_rows(lines):
    """The cells of each body row of the Markdown tables in `lines`: a table's first row is its
    header, its second the rule under it."""
    rule = re.compile(r'^\|[\s|:-]+\|?$')
    body, in_table = [], False
    for line in lines:
        if not line.startswith('|'):
            in_table = False
            continue
        if not in_table:
            in_table = True  # the header
            continue
        if rule.match(line):
            continue
        body.append([c.strip() for c in re.split(r'(?<!\\)\|', line.strip().strip('|'))])
    return body


def code_spans(text):
    return re.findall(r'`([^`]+)`', text)


def help_options(help_text):
    longs = sorted(set(OPT_RE.findall(help_text)))
    # Short options: in the option column (up to two spaces) of the lines that start with one.
    columns = [re.split(r'\s{2,}', l.strip())[0] for l in help_text.split('\n')
               if l.lstrip().startswith('-')]
    shorts = sorted({s for c in columns for s in SHORT_RE.findall(c)})
    return longs, shorts


def mode_options(help_path, doc, title):
    longs, shorts = help_options(read(help_path))
    rows = table_rows(section(read(doc), title))
    where = '%s "%s"' % (os.path.basename(doc), title)
    if not rows:
        say(False, 'no options table in %s' % where)
        return
    spans = [s for row in rows for s in code_spans(' | '.join(row))]
    for opt in longs:
        say(any(re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(opt), s) for s in spans),
            'option %s is in the table of %s' % (opt, where))
    for opt in shorts:
        say(any(re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(opt), s) for s in spans),
            'option %s is in the table of %s' % (opt, where))
    named = sorted({o for row in rows for s in code_spans(row[0]) for o in OPT_RE.findall(s)})
    for opt in named:
        say(opt in longs, 'option %s of the table of %s is an option of the program' % (opt, where))


def mode_mentions(help_path, doc):
    longs, _ = help_options(read(help_path))
    text = read(doc)
    for opt in longs:
        say(re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(opt), text) is not None,
            'option %s is in %s' % (opt, os.path.basename(doc)))


def mode_verbatim(help_path, doc):
    want = read(help_path).rstrip('\n')
    say(want in read(doc), '%s shows %s word for word' % (os.path.basename(doc),
                                                         os.path.basename(help_path)))


def mode_methods(list_path, doc, title):
    methods = [m for m in read(list_path).split() if m]
    rows = table_rows(section(read(doc), title))
    where = '%s "%s"' % (os.path.basename(doc), title)
    if not methods or not rows:
        say(False, 'methods to check (%d) and a table in %s (%d rows)' % (len(methods), where,
                                                                        len(rows)))
        return
    first = {s for row in rows for s in code_spans(row[0])}
    for m in methods:
        say(m in first, 'method %s is in the table of %s' % (m, where))
    for m in sorted(first):
        say(m in methods, 'method %s of the table of %s is a method of the daemon' % (m, where))


def mode_length(path, most):
    n = read(path).count('\n')
    say(n <= int(most), '%s has %d lines (at most %s)' % (os.path.basename(path), n, most))


def slug(heading):
    """GitHub's anchor of a heading: lower case, formatting and punctuation dropped, each space
    a hyphen."""
    s = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)
    s = s.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(path):
    seen, out = {}, set()
    for line in prose_lines(read(path)):
        m = re.match(r'^#+\s+(.*?)\s*#*\s*$', line)
        if not m:
            continue
        a = slug(m.group(1))
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else '%s-%d' % (a, n))
    return out


def mode_links(top, files):
    for path in files:
        rel = os.path.relpath(path, top)
        links = [l for line in prose_lines(read(path)) for l in LINK_RE.findall(line)]
        bad = 0
        for link in links:
            if re.match(r'^[a-z]+:', link):
                continue
            target, _, anchor = link.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target \
                else path
            if not os.path.exists(dest):
                say(False, '%s: link %s: no file %s' % (rel, link, os.path.relpath(dest, top)))
                bad += 1
            elif anchor and (not dest.endswith('.md') or anchor not in anchors(dest)):
                say(False, '%s: link %s: no heading #%s in %s' % (rel, link, anchor,
                                                                   os.path.relpath(dest, top)))
                bad += 1
        if not bad:
            say(True, '%s: its %d relative links reach their files and headings' % (rel, len(
                [l for l in links if not re.match(r'^[a-z]+:', l)])))


def tree_basenames(top):
    names = set()
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith('.') and not d.startswith('build')]
        names.update(files)
    return names


def mode_paths(top, files):
    names = tree_basenames(top)
    for path in files:
        rel = os.path.relpath(path, top)
        text = read(path)
        found = sorted({p.rstrip('.') for p in PATH_RE.findall(text)})
        bad = 0
        for p in found:
            full = p if p.split('/')[0] in TOP_DIRS else 'controller/' + p
            if not glob.glob(os.path.join(top, full)):
                say(False, '%s names %s: not in the tree' % (rel, full))
                bad += 1
        files_named = sorted(set(BASENAME_RE.findall(text)))
        for name in files_named:
            if name not in names:
                say(False, '%s names %s: no such file in the tree' % (rel, name))
                bad += 1
        if not bad:
            say(True, '%s: the %d paths and %d file names it gives exist' % (rel, len(found),
                                                                            len(files_named)))


def main(argv):
    mode, args = argv[1], argv[2:]
    if mode == 'options':
        mode_options(*args)
    elif mode == 'mentions':
        mode_mentions(*args)
    elif mode == 'verbatim':
        mode_verbatim(*args)
    elif mode == 'methods':
        mode_methods(*args)
    elif mode == 'length':
        mode_length(*args)
    elif mode == 'links':
        mode_links(args[0], args[1:])
    elif mode == 'paths':
        mode_paths(args[0], args[1:])
    else:
        sys.exit('docs_check.py: unknown mode %s' % mode)


if __name__ == '__main__':
    main(sys.argv)
