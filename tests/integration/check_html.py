#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks an HTML report of nnergy.reporter.html in a real headless browser.

    check_html.py REPORT.html [--charts ID,...] [--notes ID,...] [--runs N] [--min-rows N]
                  [--keep DIR] [--skip-ok]

Static checks first (the file is self-contained, never prints nan/inf), then in Chromium:
  * the page loads without script errors: the page's own error hook writes them to the root
    element's data-errors (read from --dump-dom), and Chromium's console log (--enable-logging)
    must hold no console message at all ("Uncaught ...", a refused fetch, ...);
  * every id of --charts is a drawn chart (<figure>), every id of --notes a note standing in
    for one, and there is a section per run;
  * sorting, filtering and the run selector work: a copy of the page with a test script
    appended clicks a header twice, types a kernel name in the filter and picks another run;
  * a screenshot is not blank: the PNG is decoded (zlib) and its colours counted.
Prints the page's own timing (data-render-ms: navigation start to the end of its script).

Exit 0 on success, 1 on a failure, 77 (SKIP) when Chromium is not installed.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def find_chromium():
    explicit = os.environ.get("NNERGY_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chromium, profile, args, url):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--no-default-browser-check", "--disable-extensions", "--user-data-dir=" + profile,
           "--enable-logging=stderr", "--v=0"] + args + [url]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("chromium did not finish in 120 s: " + " ".join(cmd))
    if p.returncode != 0:
        fail("chromium exited %d\n%s" % (p.returncode, p.stderr[-3000:]))
    return p.stdout, p.stderr


def console_messages(stderr):
    """Console output of the page: every 'CONSOLE' log line, and any 'Uncaught'."""
    return [line for line in stderr.splitlines()
            if ":CONSOLE" in line or "Uncaught" in line]


def root_attributes(dom):
    m = re.search(r"<html\b([^>]*)>", dom)
    if not m:
        fail("no <html> element in the dumped DOM")
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


def element_tag(dom, element_id):
    m = re.search(r'<(\w+)\b[^>]*\bid="%s"' % re.escape(element_id), dom)
    return m.group(1) if m else None


# A test script appended to a copy of the page: it drives the page's controls the way a person
# would and writes what it found to the root element's data-selftest.
SELF_TEST = r"""
<script>
(function(){
var root=document.documentElement,problems=[];
function check(ok,what){if(!ok)problems.push(what);}
try{
  var table=document.querySelector("section.run table.kernels");
  check(table,"no kernel table");
  if(table){
    var head=table.tHead.rows[0].cells,col=-1;
    for(var i=0;i<head.length;i++)if(/^latency/.test(head[i].textContent)){col=i;break;}
    if(col<0)col=0;
    function keys(){var out=[],rows=table.tBodies[0].rows;
      for(var i=0;i<rows.length;i++){var v=rows[i].cells[col].getAttribute("data-v");
        if(v!==null&&v!=="")out.push(parseFloat(v));}return out;}
    function sorted(a,asc){for(var i=1;i<a.length;i++)if(asc?a[i]<a[i-1]:a[i]>a[i-1])return false;return true;}
    head[col].click();
    check(head[col].getAttribute("aria-sort")==="ascending","first click does not sort ascending");
    check(sorted(keys(),true),"rows not in ascending order after one click");
    head[col].click();
    check(head[col].getAttribute("aria-sort")==="descending","second click does not sort descending");
    check(sorted(keys(),false),"rows not in descending order after two clicks");
    var section=table.closest("section.run");
    var input=section.querySelector("input[data-table]");
    check(input,"no filter box");
    var rows=table.tBodies[0].rows,name=rows[0].cells[1].textContent.trim();
    if(input&&name){
      input.value=name;input.dispatchEvent(new Event("input"));
      var shown=0,wrong=0;
      for(var r=0;r<rows.length;r++)if(!rows[r].hidden){shown++;
        if(rows[r].textContent.toLowerCase().indexOf(name.toLowerCase())<0)wrong++;}
      check(shown>=1,"filter hides the row it was given");
      check(wrong===0,"filter shows rows without the text");
      input.value="no kernel is called this \u2603";input.dispatchEvent(new Event("input"));
      shown=0;for(var r2=0;r2<rows.length;r2++)if(!rows[r2].hidden)shown++;
      check(shown===0,"filter on absent text still shows rows");
      input.value="";input.dispatchEvent(new Event("input"));
      shown=0;for(var r3=0;r3<rows.length;r3++)if(!rows[r3].hidden)shown++;
      check(shown===rows.length,"clearing the filter does not show every row");}
  }
  var buttons=document.querySelectorAll("nav.runs button");
  if(buttons.length>2){
    buttons[1].click();
    var runs=document.querySelectorAll("section.run");
    check(runs[0].hidden&&!runs[1].hidden,"run selector does not show the second run alone");
    buttons[buttons.length-1].click();
    var all=true;for(var s=0;s<runs.length;s++)if(runs[s].hidden)all=false;
    check(all,"'all runs' does not show every run");}
}catch(e){problems.push("exception: "+e.message);}
root.setAttribute("data-selftest",problems.length?problems.join("; "):"ok");
})();
</script>
"""


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode_png(path):
    """(width, height, channels, rows of bytes) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                fail("unexpected PNG format: depth %d, colour type %d, interlace %d"
                     % (depth, colour, interlace))
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev, p = [], bytearray(stride), 0
    for _ in range(height):
        filt, line = raw[p], bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + a) & 0xFF
            elif filt == 2:
                line[i] = (line[i] + b) & 0xFF
            elif filt == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 0xFF
            elif filt == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 0xFF
            elif filt != 0:
                fail("bad PNG filter type %d" % filt)
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def screenshot_stats(path):
    width, height, channels, rows = decode_png(path)
    colours, non_white = set(), 0
    for row in rows:
        for x in range(0, width * channels, channels):
            px = row[x:x + 3]
            colours.add(px)
            if px != b"\xff\xff\xff":
                non_white += 1
    return width, height, len(colours), non_white / float(width * height)


def static_checks(html):
    for bad in ("http://", "https://", "<link", "@import", "url(", " src="):
        if bad in html:
            fail("the page is not self-contained: it contains %r" % bad)
    # Where numbers go: attribute values, cell and label text.
    m = re.search(r'(="|>|\s)-?(nan|inf|infinity)(?=["<\s])', html, re.I)
    if m:
        fail("the page prints a non-finite number near: %r" % html[max(0, m.start() - 60):m.end() + 20])
    if not html.startswith("<!DOCTYPE html>"):
        fail("the page does not start with <!DOCTYPE html>")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--charts", default="", help="ids that must be drawn charts")
    ap.add_argument("--notes", default="", help="ids that must be notes (chart not drawn)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--min-rows", type=int, default=1, help="kernel table rows, first run")
    ap.add_argument("--keep", help="directory to keep the screenshot in")
    ap.add_argument("--skip-ok", action="store_true",
                    help="exit 0 rather than 77 without Chromium (for the bench target)")
    args = ap.parse_args()

    html = open(args.report, encoding="utf-8").read()
    static_checks(html)
    size = os.path.getsize(args.report)

    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium is not installed (scripts/install-deps.sh installs it)")
        return 0 if args.skip_ok else SKIP

    work = tempfile.mkdtemp(prefix="nnergy-html-check-")
    try:
        url = "file://" + os.path.abspath(args.report)
        dom, log = run_chromium(chromium, os.path.join(work, "p1"), ["--dump-dom"], url)
        messages = console_messages(log)
        if messages:
            fail("console messages while loading:\n" + "\n".join(messages))
        attrs = root_attributes(dom)
        if "data-errors" in attrs:
            fail("script errors: " + attrs["data-errors"])
        if attrs.get("data-ready") != "1":
            fail("the page's script did not finish (no data-ready on <html>)")
        for element_id in filter(None, args.charts.split(",")):
            tag = element_tag(dom, element_id)
            if tag is None:
                fail("no element with id %r" % element_id)
            if tag not in ("figure", "section", "table", "nav"):
                fail("id %r is a <%s>, not a drawn chart" % (element_id, tag))
        for element_id in filter(None, args.notes.split(",")):
            if not re.search(r'<p\b[^>]*\bid="%s"[^>]*data-missing="1"' % re.escape(element_id), dom):
                fail("id %r is not a note standing in for a chart" % element_id)
        sections = re.findall(r'<section\b[^>]*class="run"[^>]*id="run(\d+)"', dom)
        if len(sections) != args.runs:
            fail("%d run sections, expected %d" % (len(sections), args.runs))
        first = re.search(r'<table class="kernels" id="run1-kernels">.*?</table>', dom, re.S)
        rows = first.group(0).count("<tr") - 1 if first else 0
        if rows < args.min_rows:
            fail("the first kernel table has %d rows, expected at least %d" % (rows, args.min_rows))
        if "<svg" not in dom:
            fail("no SVG in the page")

        instrumented = os.path.join(work, "selftest.html")
        with open(instrumented, "w", encoding="utf-8") as f:
            f.write(html.replace("</body>", SELF_TEST + "</body>", 1))
        dom2, log2 = run_chromium(chromium, os.path.join(work, "p2"), ["--dump-dom"],
                                  "file://" + instrumented)
        attrs2 = root_attributes(dom2)
        if "data-errors" in attrs2 or console_messages(log2):
            fail("script errors while driving the page: %s %s"
                 % (attrs2.get("data-errors", ""), "\n".join(console_messages(log2))))
        if attrs2.get("data-selftest") != "ok":
            fail("page controls: " + attrs2.get("data-selftest", "the test script did not run"))

        png = os.path.join(work, "shot.png")
        run_chromium(chromium, os.path.join(work, "p3"),
                     ["--hide-scrollbars", "--window-size=1280,1400", "--screenshot=" + png], url)
        if not os.path.exists(png):
            fail("chromium wrote no screenshot")
        width, height, colours, inked = screenshot_stats(png)
        if colours < 16 or inked < 0.02:
            fail("the screenshot looks blank: %d colours, %.1f%% non-white pixels"
                 % (colours, 100 * inked))
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            shutil.copy(png, os.path.join(args.keep, os.path.basename(args.report) + ".png"))
        print("ok: %s, %.0f kB, %d run(s), %d kernel rows; screenshot %dx%d, %d colours, "
              "%.1f%% non-white; page script done at %s ms after navigation start"
              % (args.report, size / 1000.0, args.runs, rows, width, height, colours,
                 100 * inked, attrs.get("data-render-ms", "?")))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
